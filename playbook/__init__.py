"""The GPU utilization playbook: probes, readers, diagnosis, labs and reports.

Importing this package has no side effects: it neither initialises NVML nor imports torch.
Submodules are imported on first use:

    from playbook.readers import read_paths   # tidy tables from any telemetry the readers know
    from playbook.probes import Recorder      # live probes that write a run directory
"""

__version__ = "0.1.0"

from playbook.core.errors import PlaybookError

__all__ = ["PlaybookError", "__version__"]
