"""``F.embedding_bag`` and ``nn.EmbeddingBag`` against PyTorch: every mode with offsets (empty bags
included), 2-D input, include_last_offset, padding_idx, per_sample_weights; weight and weight-of-sample
gradients under a random upstream gradient; reprs and errors; the text-classification idiom trains."""
import numpy as np
import pytest

import tinynorm as tn
from nn_compare import same, same_error, torch

RNG = np.random.default_rng(0)
WEIGHT = RNG.standard_normal((10, 3))
IDS = np.array([1, 2, 4, 0, 4, 3, 9, 0])
OFFSETS = np.array([0, 3, 3, 6])  # the second bag is empty


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 0])
def test_embedding_bag_with_offsets_matches_torch(mode, padding_idx, device):
    same(lambda lib, w: lib.nn.functional.embedding_bag(lib.tensor(IDS), w, lib.tensor(OFFSETS), mode=mode,
                                                        padding_idx=padding_idx), WEIGHT, device=device)
    same(lambda lib, w: lib.nn.functional.embedding_bag(lib.tensor(IDS), w, lib.tensor(np.append(OFFSETS, 8)),
                                                        mode=mode, include_last_offset=True), WEIGHT, device=device)
    same(lambda lib, w: lib.nn.functional.embedding_bag(lib.tensor(IDS.reshape(2, 4)), w, mode=mode,
                                                        padding_idx=padding_idx), WEIGHT, device=device)


def test_per_sample_weights_and_max_norm_match_torch(device):
    same(lambda lib, w, s: lib.nn.functional.embedding_bag(lib.tensor(IDS), w, lib.tensor(OFFSETS), mode="sum",
                                                           per_sample_weights=s), WEIGHT, RNG.random(8), device=device)
    same(lambda lib, w: lib.nn.functional.embedding_bag(lib.tensor(IDS), w.detach().clone(), lib.tensor(OFFSETS),
                                                        max_norm=1.0), WEIGHT, device=device)


def test_embedding_bag_module_repr_and_errors_match_torch(device):
    for make in (lambda nn: nn.EmbeddingBag(10, 3), lambda nn: nn.EmbeddingBag(10, 3, mode="sum", padding_idx=0,
                                                                                  max_norm=1.0)):
        assert repr(make(tn.nn)) == repr(make(torch.nn))
    bag = tn.nn.EmbeddingBag(10, 3, padding_idx=2)
    assert not bag.weight.numpy()[2].any()
    bag.to(device)
    out = bag(tn.tensor(IDS, device=device), tn.tensor(OFFSETS, device=device))
    assert out.shape == (4, 3)
    fn = lambda lib, w, **kw: lib.nn.functional.embedding_bag(lib.tensor(IDS), w, **kw)  # noqa: E731
    same_error(lambda lib, w: fn(lib, w), WEIGHT, device=device)
    same_error(lambda lib, w: fn(lib, w, offsets=lib.tensor([1, 3])), WEIGHT, device=device)
    same_error(lambda lib, w: fn(lib, w, offsets=lib.tensor(OFFSETS), mode="x"), WEIGHT, device=device)
    same_error(lambda lib, w: fn(lib, w, offsets=lib.tensor(OFFSETS), mode="max", per_sample_weights=lib.ones(8)),
               WEIGHT, device=device)
    same_error(lambda lib, w: lib.nn.functional.embedding_bag(lib.tensor(IDS.reshape(2, 4)), w, lib.tensor([0])),
               WEIGHT, device=device)


def test_the_text_classification_idiom_learns():
    """EmbeddingBag + Linear over bags of token ids, labelled by whether token 1 or token 2 is in more
    often (the PyTorch text-classification tutorial's model): near-perfect after 100 SGD steps."""
    tn.manual_seed(0)
    rng = np.random.default_rng(1)
    bag, head = tn.nn.EmbeddingBag(20, 8, mode="mean"), tn.nn.Linear(8, 2)
    optimizer = tn.optim.SGD(list(bag.parameters()) + list(head.parameters()), lr=2.0)

    def batch(size):
        lengths = rng.integers(3, 9, size)
        ids = [rng.choice([1, 2] + list(range(3, 20)), n) for n in lengths]
        labels = [int((s == 1).sum() > (s == 2).sum()) for s in ids]
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        return tn.tensor(np.concatenate(ids)), tn.tensor(offsets), tn.tensor(labels)

    for _ in range(100):
        ids, offsets, labels = batch(64)
        loss = tn.nn.functional.cross_entropy(head(bag(ids, offsets)), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    ids, offsets, labels = batch(500)
    with tn.no_grad():
        accuracy = float((head(bag(ids, offsets)).argmax(1) == labels).float().mean())
    assert accuracy > 0.8, accuracy
