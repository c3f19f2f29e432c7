"""Pure analyses: tidy frames in, frames and dataclasses out. No I/O, no plotting."""
