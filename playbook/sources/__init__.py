"""Sources: telemetry fetched from a live system rather than read from a file.

    prometheus.py   dcgm-exporter series from a Prometheus-compatible HTTP API (Prometheus, Thanos, Mimir) into
                    the telemetry table, for `playbook diagnose prometheus://HOST:PORT` and `playbook watch`
    fleet_screen.py per-GPU summaries computed by the server (avg/quantile/stddev_over_time, drops, XID, clocks),
                    ranked by suspected loss, then raw series only for the flagged GPUs and a sample
    live.py         incremental samplers for `playbook watch`: NVML (probes/nvml.py), `nvidia-smi -lms` in a
                    subprocess when NVML cannot be loaded, and Prometheus polled over a rolling window
"""

SCHEMES = ("prometheus://", "prometheus+http://", "prometheus+https://")


def is_url(text: str) -> bool:
    """True for a prometheus:// input."""
    return str(text).startswith(SCHEMES)


def add_arguments(parser) -> None:
    """--since / --until / --step / --match, for commands that take prometheus:// inputs."""
    from playbook.core.units import duration_s

    group = parser.add_argument_group("prometheus:// inputs (dcgm-exporter series from a Prometheus API)")
    group.add_argument("--since", type=duration_s, default=6 * 3600.0, metavar="DURATION",
                       help="how far back to query, e.g. 30m, 6h, 2d (default 6h)")
    group.add_argument("--until", default=None, metavar="TIME",
                       help="end of the range: an ISO time (UTC unless it names a zone); default now")
    group.add_argument("--step", type=duration_s, default=15.0, metavar="DURATION",
                       help="resolution asked of the server, e.g. 15s (default; dcgm-exporter's usual scrape "
                            "interval), 1m for multi-day ranges")
    group.add_argument("--match", default=None, metavar="LABELS",
                       help="extra label matchers, e.g. 'Hostname=~\"node0[0-7]\",job=\"dcgm\"'")
    group.add_argument("--screen", choices=("auto", "on", "off"), default="auto",
                       help="fleet screen: ask the server for per-GPU summaries and pull raw series only for the "
                            "GPUs they flag plus a sample (see playbook.sources.fleet_screen); auto (default) "
                            "screens when a raw pull would read more than 20 M points (GPU series × samples × metrics)")
    group.add_argument("--deadline", type=duration_s, default=None, metavar="DURATION",
                       help="give up on a server after this long, all queries and retries together (default 15m)")
    group.add_argument("--max-response", type=_mebibytes, default=None, metavar="MIB",
                       help="largest answer read, in MiB after decompression (default 256)")


def _mebibytes(text: str) -> int:
    """--max-response: a positive number of MiB, as bytes."""
    import argparse

    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < 2**40:
        raise argparse.ArgumentTypeError(f"not a positive number of MiB: {text!r}")
    return int(value * 2**20)
