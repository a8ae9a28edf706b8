"""What a run carries across a --resume besides its weights and optimizer: the annealing schedule (alpha of the
paper's Table 5, which train() computes as schedule["scale"] * (1 - (i - 1) / num_iterations)) and every random
generator the process draws from. Every script carries a checked copy of each function below (`# Copied from
common.resume.<name>`; `python -m tools.check_copies`)."""

import random

import numpy as np
import torch


def resumed_schedule(schedule: dict, iteration: int, num_iterations: int) -> dict:
    """The annealing schedule of a run resumed after update `iteration`: {"scale", "num_iterations"}, with alpha_i =
    scale * (1 - (i - 1) / num_iterations) (a new run's scale is 1). Same length: it goes on unchanged. A new
    --total-timesteps: the scale makes alpha go on from the value the last update had down to 0 over the new
    length, so resuming never raises the learning rate (nor an annealed clip range)."""
    if schedule["num_iterations"] == num_iterations:
        return schedule
    last = schedule["scale"] * (1.0 - (iteration - 1) / schedule["num_iterations"])  # alpha of update `iteration`
    # scale' * (1 - iteration / num_iterations) = last: update iteration + 1 starts where update `iteration` was
    return {"scale": last * num_iterations / (num_iterations - iteration), "num_iterations": num_iterations}


def rng_states(device: torch.device) -> dict:
    """Every random generator this process draws from: Python's, NumPy's, torch's CPU one and the GPU's in use."""
    np_state = np.random.get_state()
    states = {
        "python": random.getstate(),
        "numpy": (np_state[0], np_state[1].tolist(), *np_state[2:]),
        "torch": torch.get_rng_state(),
    }
    if device.type == "cuda":
        states["cuda"] = torch.cuda.get_rng_state(device)
    return states


def restore_rng(states: dict, device: torch.device) -> None:
    random.setstate(states["python"])
    np_state = states["numpy"]
    np.random.set_state((np_state[0], np.array(np_state[1], dtype=np.uint32), *np_state[2:]))
    torch.set_rng_state(states["torch"])
    if device.type == "cuda" and "cuda" in states:
        torch.cuda.set_rng_state(states["cuda"], device)
