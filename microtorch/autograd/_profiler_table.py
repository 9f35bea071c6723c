"""PyTorch's profiler table: the columns, widths, units and footer of ``EventList.table``."""

from __future__ import annotations

from .profiler_util import (
    DeviceType,
    EventList,
    _flops_scale,
    _format_memory,
    _format_time,
    _format_time_share,
)

_SPACING = 2
_COLUMN = 12  # the width of every numeric column
_UNITS = {"s": 1e6, "ms": 1e3, "us": 1.0}


def _in_unit(time_us, time_unit) -> str:
    if time_unit in _UNITS:
        return f"{time_us / _UNITS[time_unit]:.3f}{time_unit}"
    return _format_time(time_us)


def _trim_path(path: str, width: int) -> str:
    if len(path) > width:
        path = path[len(path) - width:]
        if len(path) > 3:
            path = "..." + path[3:]
    return path


def build_table(events, sort_by=None, header=None, row_limit=100, max_src_column_width=75,
                max_name_column_width=55, max_shapes_column_width=80, with_flops=False,
                profile_memory=False, top_level_events_only=False, time_unit=None) -> str:
    """The events (``FunctionEvent``s or their averages) as PyTorch prints them."""
    if len(events) == 0:
        return ""
    has_device_time = any(e.self_device_time_total > 0 for e in events)
    has_device_mem = any(e.self_device_memory_usage > 0 for e in events)
    use_device = events[0].use_device
    if not use_device and has_device_time:
        raise RuntimeError("use_device is None, but there is device performance data.")
    has_shapes = any(e.input_shapes is not None and len(e.input_shapes) > 0 for e in events)
    has_overloads = any(e.overload_name is not None and len(e.overload_name) > 0
                        for e in events)
    if sort_by is not None:
        attr = sort_by.replace("cuda", "device").replace("xpu", "device") \
            .replace("privateuse1", "device")
        events = EventList(sorted(events, key=lambda e: getattr(e, attr), reverse=True),
                           use_device=use_device, profile_memory=profile_memory,
                           with_flops=with_flops)

    name_width = max(len(e.key) for e in events) + 4
    if max_name_column_width is not None:
        name_width = min(name_width, max_name_column_width)
    shapes_width = max(len(str(e.input_shapes)) for e in events) + 4
    if max_shapes_column_width is not None:
        shapes_width = min(shapes_width, max_shapes_column_width)
    stacks = [e.stack for e in events if e.stack is not None and len(e.stack) > 0]
    has_stack = len(stacks) > 0
    src_width = None
    if has_stack:
        src_width = max(max(len(entry) for entry in stack) for stack in stacks) + 4
        if max_src_column_width is not None:
            src_width = min(src_width, max_src_column_width)

    device = use_device.upper() if use_device is not None else "None"
    headers = ["Name", *(["Overload Name"] if has_overloads else []), "Self CPU %", "Self CPU",
               "CPU total %", "CPU total", "CPU time avg"]
    if has_device_time:
        headers += [f"Self {device}", f"Self {device} %", f"{device} total",
                    f"{device} time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
        if use_device and has_device_mem:
            headers += [f"{device} Mem", f"Self {device} Mem"]
    headers.append("# of Calls")
    with_node_id = any(e.node_id != -1 for e in events)
    if with_node_id:
        headers.append("Node ID")

    widths = [name_width] * (1 + has_overloads) + [_COLUMN] * (len(headers) - 1 - has_overloads)
    aligns = [">"] * len(widths)
    if has_shapes:
        headers.append("Input Shapes")
        widths.append(shapes_width)
        aligns.append(">")
    if has_stack:
        headers.append("Source Location")
        widths.append(src_width)
        aligns.append("<")
    flops_scale = 1.0
    if with_flops:
        counted = [e.flops for e in events if e.flops > 0]
        if counted:
            flops_scale, unit = _flops_scale(min(counted))
            headers.append(f"Total {unit}")
            widths.append(_COLUMN)
            aligns.append(">")
        else:
            with_flops = False
    row_format = "".join("{: " + a + str(w) + "}" + " " * _SPACING for a, w in zip(aligns, widths))
    separator = "".join("-" * w + " " * _SPACING for w in widths)
    line_length = sum(w + _SPACING for w in widths) - _SPACING

    total_self_cpu = total_self_device = 0
    for e in events:
        total_self_cpu += e.self_cpu_time_total
        if e.device_type == DeviceType.CPU and e.is_legacy:
            total_self_device += e.self_device_time_total
        elif e.device_type != DeviceType.CPU and not e.is_user_annotation:
            total_self_device += e.self_device_time_total

    lines = []
    if header is not None:
        lines += ["=" * line_length, header]
    if top_level_events_only:
        lines += ["=" * line_length, "This report only display top-level ops statistics"]
    lines += [separator, row_format.format(*headers), separator]
    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_level_events_only and e.cpu_parent is not None:
            continue
        shown += 1
        name = e.key
        if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
            name = name[:max_name_column_width - 3] + "..."
        e.self_cpu_percent = _format_time_share(e.self_cpu_time_total, total_self_cpu)
        e.total_cpu_percent = (_format_time_share(e.cpu_time_total, total_self_cpu)
                               if not e.is_async else 0)
        row = [name]
        if has_overloads:
            overload = e.overload_name
            if max_name_column_width is not None and len(overload) >= max_name_column_width - 3:
                overload = overload[:max_name_column_width - 3] + "..."
            row.append(overload)
        row += [e.self_cpu_percent, _in_unit(e.self_cpu_time_total, time_unit),
                e.total_cpu_percent, _in_unit(e.cpu_time_total, time_unit),
                _in_unit(e.cpu_time, time_unit)]
        if has_device_time:
            e.total_device_percent = _format_time_share(e.self_device_time_total,
                                                        total_self_device)
            row += [_in_unit(e.self_device_time_total, time_unit), e.total_device_percent,
                    _in_unit(e.device_time_total, time_unit), _in_unit(e.device_time, time_unit)]
        if profile_memory:
            row += [_format_memory(e.cpu_memory_usage), _format_memory(e.self_cpu_memory_usage)]
            if use_device and has_device_mem:
                row += [_format_memory(e.device_memory_usage),
                        _format_memory(e.self_device_memory_usage)]
        row.append(e.count)
        if with_node_id:
            row.append(e.node_id)
        if has_shapes:
            row.append(str(e.input_shapes)[:shapes_width])
        # (PyTorch puts the FLOPs value before the source location, the column after it)
        if with_flops:
            row.append("--" if e.flops <= 0 else f"{e.flops * flops_scale:8.3f}")
        if has_stack:
            row.append(_trim_path(e.stack[0], src_width) if len(e.stack) > 0 else "")
        lines.append(row_format.format(*row))
        if has_stack:
            blank = [""] * (len(headers) - 1)
            for entry in e.stack[1:]:
                lines.append(row_format.format(*blank, _trim_path(entry, src_width)))
            lines.append(row_format.format(*blank, ""))
    lines += [separator, f"Self CPU time total: {_in_unit(total_self_cpu, time_unit)}"]
    if has_device_time:
        lines.append(f"Self {device} time total: {_in_unit(total_self_device, time_unit)}")
    return "".join(line + "\n" for line in lines)
