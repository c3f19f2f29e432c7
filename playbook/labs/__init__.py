"""The labs: real PyTorch workloads with fault and fix knobs (workloads), the fixes users import into their own code (fixes), and LABELLED SYNTHETIC data with known answers (synthetic)."""
