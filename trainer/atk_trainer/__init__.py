"""atk's bundled trainer: policy loading, losses, optimisation, checkpoints and the embedded engine."""
