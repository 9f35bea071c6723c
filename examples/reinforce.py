"""REINFORCE on a tiny deterministic corridor task: a policy network, actions drawn from
``torch.distributions.Categorical``, discounted returns normalised with an epsilon, and the
policy-gradient loss ``-log_prob * return``."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical

eps = np.finfo(np.float32).eps.item()


class Corridor:
    """Walk left or right on 0..6; reaching 6 pays 1, every step costs 0.05."""

    def reset(self):
        self.pos = 3
        return self.observation()

    def observation(self):
        obs = np.zeros(7, dtype=np.float32)
        obs[self.pos] = 1.0
        return obs

    def step(self, action):
        self.pos = max(0, min(6, self.pos + (1 if action == 1 else -1)))
        done = self.pos == 6
        return self.observation(), (1.0 if done else -0.05), done


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.affine1 = nn.Linear(7, 16)
        self.affine2 = nn.Linear(16, 2)
        self.saved_log_probs, self.rewards = [], []

    def forward(self, x):
        return F.softmax(self.affine2(F.relu(self.affine1(x))), dim=1)


def main():
    torch.manual_seed(543)
    env, policy = Corridor(), Policy()
    optimizer = optim.Adam(policy.parameters(), lr=1e-2)
    gamma = 0.99
    for episode in range(1, 9):
        state, ep_reward = env.reset(), 0.0
        for _ in range(20):
            probs = policy(torch.from_numpy(state).float().unsqueeze(0))
            m = Categorical(probs)
            action = m.sample()
            policy.saved_log_probs.append(m.log_prob(action))
            state, reward, done = env.step(action.item())
            policy.rewards.append(reward)
            ep_reward += reward
            if done:
                break
        R, returns = 0.0, []
        for r in policy.rewards[::-1]:
            R = r + gamma * R
            returns.insert(0, R)
        returns = torch.tensor(returns)
        if len(returns) > 1:
            returns = (returns - returns.mean()) / (returns.std() + eps)
        policy_loss = torch.cat([-lp * R for lp, R in zip(policy.saved_log_probs, returns)]).sum()
        optimizer.zero_grad()
        policy_loss.backward()
        optimizer.step()
        print(f"Episode {episode}\tsteps {len(policy.rewards)}\treward {ep_reward:.2f}"
              f"\tloss {policy_loss.item():.4f}")
        del policy.rewards[:], policy.saved_log_probs[:]


if __name__ == "__main__":
    main()
