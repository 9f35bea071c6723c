"""PyTorch's per-sample-gradients tutorial (torch.func): the tutorial's CNN and loss, the
per-sample gradients by a loop over the samples and by ``vmap(grad(loss))`` over
``functional_call``; on the CPU with a batch of 8 (the tutorial takes 64 on a GPU)."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

torch.manual_seed(0)


class SimpleCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


def loss_fn(predictions, targets):
    return F.nll_loss(predictions, targets)


batch_size = 8
data = torch.randn(batch_size, 1, 28, 28)
targets = torch.randint(10, (batch_size,))

# the mini-batch's average gradient
model = SimpleCNN()
predictions = model(data)
loss = loss_fn(predictions, targets)
loss.backward()
print(f"loss {loss.item():.5f}")


# per-sample gradients, one sample at a time
def compute_grad(sample, target):
    sample = sample.unsqueeze(0)  # prepend batch dimension for processing
    target = target.unsqueeze(0)
    prediction = model(sample)
    loss = loss_fn(prediction, target)
    return torch.autograd.grad(loss, list(model.parameters()))


def compute_sample_grads(data, targets):
    sample_grads = [compute_grad(data[i], targets[i]) for i in range(batch_size)]
    sample_grads = zip(*sample_grads)
    return [torch.stack(shards) for shards in sample_grads]


per_sample_grads = compute_sample_grads(data, targets)
print(tuple(per_sample_grads[0].shape))

# per-sample gradients with function transforms
params = {k: v.detach() for k, v in model.named_parameters()}
buffers = {k: v.detach() for k, v in model.named_buffers()}


def compute_loss(params, buffers, sample, target):
    batch = sample.unsqueeze(0)
    targets = target.unsqueeze(0)
    predictions = functional_call(model, (params, buffers), (batch,))
    loss = loss_fn(predictions, targets)
    return loss


ft_compute_grad = grad(compute_loss)
ft_compute_sample_grad = vmap(ft_compute_grad, in_dims=(None, None, 0, 0))
ft_per_sample_grads = ft_compute_sample_grad(params, buffers, data, targets)

for name, per_sample_grad, ft_per_sample_grad in zip(
        ft_per_sample_grads, per_sample_grads, ft_per_sample_grads.values()):
    close = torch.allclose(per_sample_grad, ft_per_sample_grad, atol=3e-3, rtol=1e-5)
    print(f"{name:13s} {tuple(ft_per_sample_grad.shape)} same as the loop: {close}, "
          f"norm {ft_per_sample_grad.double().norm().item():.4f}")

# the mean of the per-sample gradients is the mini-batch's gradient
mean_close = all(torch.allclose(g.mean(0), p.grad, atol=1e-6)
                 for g, p in zip(ft_per_sample_grads.values(), model.parameters()))
print("mean of per-sample gradients == batch gradient:", mean_close)
