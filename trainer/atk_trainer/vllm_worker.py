"""The stable import path users pass to vLLM: `--worker-extension-cls atk_trainer.vllm_worker.WeightReload`.
The code lives in atk_trainer.serve.vllm_worker; this module only re-exports it so that path keeps working."""
from .serve.vllm_worker import StandinWorker, WeightReload, checkpoint_weights

__all__ = ["StandinWorker", "WeightReload", "checkpoint_weights"]
