"""Grad mode belongs to the thread, as in PyTorch: separate models train correctly in separate threads,
and one thread's ``no_grad()`` never switches recording off in another."""
import threading

import numpy as np

import tinynorm as tn
from tinynorm import nn


def train(seed: int, steps: int = 40) -> list[np.ndarray]:
    """A small regression trained with SGD, evaluating under ``no_grad`` every step (what races)."""
    rng = np.random.default_rng(seed)
    x = tn.tensor(rng.standard_normal((32, 4)), dtype=tn.float32)
    y = tn.tensor(rng.standard_normal((32, 1)), dtype=tn.float32)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    with tn.no_grad():
        for p in model.parameters():
            p.copy_(tn.tensor(rng.standard_normal(p.shape) * 0.3, dtype=tn.float32))
    optimizer = tn.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(steps):
        optimizer.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        optimizer.step()
        with tn.no_grad():
            model(x)
    return [p.detach().numpy().copy() for p in model.parameters()]


def test_two_threads_train_bit_identically_to_sequential_runs():
    sequential = [train(0), train(1)]
    results: dict[int, list[np.ndarray]] = {}
    errors: list[BaseException] = []

    def worker(seed: int) -> None:
        try:
            results[seed] = train(seed)
        except BaseException as error:  # noqa: BLE001  (reported by the main thread)
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    for seed in (0, 1):
        for ours, expected in zip(results[seed], sequential[seed]):
            np.testing.assert_array_equal(ours, expected)
    assert tn.is_grad_enabled()


def test_no_grad_in_one_thread_leaves_another_recording():
    inside, go_on = threading.Event(), threading.Event()
    seen = {}

    def holder() -> None:
        with tn.no_grad():
            inside.set()
            go_on.wait(10)
            seen["holder"] = tn.is_grad_enabled()

    thread = threading.Thread(target=holder)
    thread.start()
    inside.wait(10)
    x = tn.ones(2, requires_grad=True)
    seen["main"] = (x * 2).requires_grad and tn.is_grad_enabled()
    go_on.set()
    thread.join()
    assert seen == {"holder": False, "main": True}


def test_overlapping_no_grad_blocks_in_two_threads_restore_both():
    barrier = threading.Barrier(2)

    def block() -> None:
        with tn.no_grad():
            barrier.wait(10)
        barrier.wait(10)

    threads = [threading.Thread(target=block) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert tn.is_grad_enabled()


def test_a_new_thread_starts_with_recording_on_even_under_no_grad():
    seen = []
    with tn.no_grad():
        thread = threading.Thread(target=lambda: seen.append(tn.is_grad_enabled()))
        thread.start()
        thread.join()
    assert seen == [True]
