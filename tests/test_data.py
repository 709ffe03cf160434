"""Tests for tinynorm.data: scaling, splits, mini-batches and the bundled data sets."""

import numpy as np
import pytest

from tinynorm.data import (
    CharTokenizer,
    StandardScaler,
    load_digits,
    load_text_corpus,
    make_spirals,
    minibatches,
    sample_lm_batch,
    train_test_split,
)


def reference_standardize(X):
    """Plain float64 two-pass standardization with scale 1 for constant columns."""
    X = np.asarray(X, dtype=np.float64)
    mean = X.mean(axis=0)
    var = ((X - mean) ** 2).mean(axis=0)
    scale = np.where(var > 0, np.sqrt(var), 1.0)
    return (X - mean) / scale, mean, var, scale


def random_features(rng, n=50):
    X = rng.normal(size=(n, 4)) * [1.0, 10.0, 0.1, 1.0] + [0.0, -3.0, 5.0, 0.0]
    X[:, 3] = 7.5  # a constant column
    return X


# --------------------------------------------------------------------------- StandardScaler


def test_scaler_matches_float64_reference():
    X = random_features(np.random.default_rng(0))
    expected, mean, var, scale = reference_standardize(X)
    scaler = StandardScaler()
    out = scaler.fit_transform(X)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(scaler.mean_, mean, rtol=1e-13)
    np.testing.assert_allclose(scaler.var_, var, rtol=1e-12)
    np.testing.assert_allclose(scaler.scale_, scale, rtol=1e-12)
    assert scaler.scale_[3] == 1.0 and np.all(out[:, 3] == 0.0)
    assert scaler.n_samples_seen_ == 50


@pytest.mark.parametrize("with_mean, with_std", [(True, True), (False, True), (True, False), (False, False)])
def test_scaler_matches_sklearn(with_mean, with_std):
    preprocessing = pytest.importorskip("sklearn.preprocessing")
    X = random_features(np.random.default_rng(1))
    ours = StandardScaler(with_mean=with_mean, with_std=with_std).fit(X)
    theirs = preprocessing.StandardScaler(with_mean=with_mean, with_std=with_std).fit(X)
    np.testing.assert_allclose(ours.transform(X), theirs.transform(X), rtol=1e-12, atol=1e-12)
    for name in ("mean_", "var_", "scale_"):
        if getattr(theirs, name) is None:
            assert getattr(ours, name) is None
        else:
            np.testing.assert_allclose(getattr(ours, name), getattr(theirs, name), rtol=1e-12)
    assert ours.n_samples_seen_ == theirs.n_samples_seen_


def test_scaler_large_offset_float64():
    rng = np.random.default_rng(2)
    X = 1e6 + rng.normal(size=(1000, 3))
    expected, _, var, _ = reference_standardize(X)
    out = StandardScaler().fit_transform(X)
    np.testing.assert_allclose(out, expected, rtol=1e-9, atol=1e-9)
    # the one-pass formula E[x^2] - E[x]^2 loses every digit of this variance
    np.testing.assert_allclose(StandardScaler().fit(X).var_, var, rtol=1e-9)


def test_scaler_large_offset_float32_stays_float32():
    rng = np.random.default_rng(3)
    X = (1e6 + rng.normal(size=(1000, 3))).astype(np.float32)
    expected, _, _, _ = reference_standardize(X)  # statistics of the float32 values, in float64
    out = StandardScaler().fit_transform(X)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    assert abs(out.mean()) < 1e-4 and abs(out.std() - 1) < 1e-4


def test_scaler_inverse_round_trips_and_does_not_modify_input():
    X = random_features(np.random.default_rng(4))
    original = X.copy()
    scaler = StandardScaler().fit(X)
    back = scaler.inverse_transform(scaler.transform(X))
    np.testing.assert_allclose(back, X, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(X, original)
    assert scaler.transform(X) is not X


def test_scaler_accepts_lists_and_ints():
    out = StandardScaler().fit_transform([[1, 2], [3, 2], [5, 2]])
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, [[-np.sqrt(1.5), 0], [0, 0], [np.sqrt(1.5), 0]])


def test_scaler_errors():
    with pytest.raises(ValueError, match=r"not fitted yet.*fit\(X\)"):
        StandardScaler().transform(np.zeros((2, 3)))
    scaler = StandardScaler().fit(np.random.default_rng(5).normal(size=(4, 3)))
    with pytest.raises(ValueError, match="X has 2 features.*fitted with 3 features"):
        scaler.transform(np.zeros((4, 2)))
    with pytest.raises(ValueError, match=r"2-D.*1-D array of shape \(3,\)"):
        StandardScaler().fit(np.ones(3))
    with pytest.raises(ValueError, match=r"2-D.*3-D"):
        StandardScaler().fit(np.ones((2, 2, 2)))
    with pytest.raises(ValueError, match="NaN"):
        StandardScaler().fit([[1.0], [np.nan]])
    with pytest.raises(TypeError, match="real numbers, got dtype <U1"):
        StandardScaler().fit([["a"], ["b"]])


# --------------------------------------------------------------------------- train_test_split


def test_train_test_split_sizes_alignment_and_determinism():
    X = np.arange(100).reshape(50, 2)
    y = np.arange(50)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, seed=1)
    assert X_train.shape == (40, 2) and X_test.shape == (10, 2)
    np.testing.assert_array_equal(X_train[:, 0] // 2, y_train)  # rows stay aligned
    np.testing.assert_array_equal(X_test[:, 0] // 2, y_test)
    assert sorted(np.concatenate([y_train, y_test]).tolist()) == list(range(50))
    again = train_test_split(X, y, test_size=0.2, seed=1)
    np.testing.assert_array_equal(again[3], y_test)
    other = train_test_split(X, y, test_size=0.2, seed=2)
    assert not np.array_equal(other[3], y_test)
    assert len(train_test_split(y, test_size=7)[1]) == 7


def test_train_test_split_stratified_keeps_class_shares():
    y = np.repeat([0, 1, 2], [60, 30, 10])
    y_train, y_test = train_test_split(y, test_size=0.3, seed=0, stratify=y)
    assert len(y_test) == 30
    assert np.bincount(y_test).tolist() == [18, 9, 3]
    assert np.bincount(y_train).tolist() == [42, 21, 7]


def test_train_test_split_errors():
    with pytest.raises(ValueError, match=r"same number of samples.*\[3, 4\]"):
        train_test_split(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="test_size"):
        train_test_split(np.zeros(10), test_size=1.5)
    with pytest.raises(ValueError, match="class 1 has only 1"):
        train_test_split(np.zeros(5), stratify=[0, 0, 0, 0, 1])


# --------------------------------------------------------------------------- minibatches


@pytest.mark.parametrize("shuffle", [True, False])
def test_minibatches_cover_every_sample_once(shuffle):
    X = np.arange(23 * 2).reshape(23, 2)
    y = np.arange(23)
    batches = list(minibatches(X, y, batch_size=5, shuffle=shuffle, rng=0))
    assert [len(b[1]) for b in batches] == [5, 5, 5, 5, 3]
    seen = np.concatenate([b[1] for b in batches])
    assert sorted(seen.tolist()) == list(range(23))
    assert shuffle == (seen.tolist() != list(range(23)))
    for xb, yb in batches:
        np.testing.assert_array_equal(xb[:, 0] // 2, yb)


def test_minibatches_drop_last_and_fresh_order_per_epoch():
    y = np.arange(23)
    assert [len(b) for (b,) in minibatches(y, batch_size=5, drop_last=True, rng=0)] == [5, 5, 5, 5]
    rng = np.random.default_rng(0)
    first = np.concatenate([b for (b,) in minibatches(y, batch_size=5, rng=rng)])
    second = np.concatenate([b for (b,) in minibatches(y, batch_size=5, rng=rng)])
    assert not np.array_equal(first, second)
    repeat = np.concatenate([b for (b,) in minibatches(y, batch_size=5, rng=0)])
    np.testing.assert_array_equal(repeat, np.concatenate([b for (b,) in minibatches(y, batch_size=5, rng=0)]))


def test_minibatches_errors():
    with pytest.raises(ValueError, match=r"same number of samples.*\[3, 2\]"):
        next(minibatches(np.zeros(3), np.zeros(2), batch_size=1))
    with pytest.raises(ValueError, match="batch_size must be >= 1, got 0"):
        next(minibatches(np.zeros(3), batch_size=0))
    with pytest.raises(TypeError, match="batch_size must be an int"):
        next(minibatches(np.zeros(3), batch_size=2.0))


# --------------------------------------------------------------------------- data sets


def test_load_digits_shapes_ranges_and_split():
    pytest.importorskip("sklearn")
    X_train, y_train, X_test, y_test = load_digits()
    assert X_train.shape == (1347, 1, 8, 8) and X_test.shape == (450, 1, 8, 8)
    assert X_train.dtype == np.float32 and y_train.dtype == np.int64
    assert X_train.min() == 0.0 and X_train.max() == 1.0
    assert set(y_test.tolist()) == set(range(10))
    # stratified: each class's share of the test set matches its share overall (within rounding)
    counts = np.bincount(np.concatenate([y_train, y_test]))
    np.testing.assert_allclose(np.bincount(y_test), counts * 450 / 1797, atol=1)
    again = load_digits()
    np.testing.assert_array_equal(again[3], y_test)
    np.testing.assert_array_equal(again[0], X_train)
    assert not np.array_equal(load_digits(seed=1)[3], y_test)


def test_load_digits_names_the_install_command(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_sklearn(name, *args, **kwargs):
        if name.startswith("sklearn"):
            raise ImportError("No module named 'sklearn'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_sklearn)
    with pytest.raises(ImportError, match="pip install scikit-learn"):
        load_digits()


def test_load_mnist1d_generates_the_published_set_without_network(monkeypatch):
    requests = pytest.importorskip("requests")
    pytest.importorskip("mnist1d")
    from tinynorm.data import load_mnist1d

    def no_network(*args, **kwargs):
        raise AssertionError("load_mnist1d tried to download")

    monkeypatch.setattr(requests, "get", no_network)
    np.random.seed(123)
    expected_next = np.random.random()
    np.random.seed(123)
    X_train, y_train, X_test, y_test = load_mnist1d()
    assert np.random.random() == expected_next  # numpy's global generator is left where it was
    assert X_train.shape == (4000, 40) and X_test.shape == (1000, 40)
    assert X_train.dtype == np.float32 and y_train.dtype == np.int64
    assert set(y_train.tolist()) == set(range(10)) and 80 < np.bincount(y_test).min()  # ~100 per class
    whole = np.concatenate([X_train, X_test])
    assert abs(whole.mean()) < 1e-4 and abs(whole.std() - 1) < 1e-4  # standardized by the package
    np.testing.assert_array_equal(load_mnist1d()[0], X_train)  # the same set every time


def test_text_corpus_is_large_deterministic_text():
    text = load_text_corpus()
    assert isinstance(text, str) and len(text) > 100_000
    assert "the" in text and text == load_text_corpus()
    assert load_text_corpus(max_chars=1000) == text[:1000]


def test_char_tokenizer_round_trips():
    text = load_text_corpus(max_chars=20_000)
    tokenizer = CharTokenizer(text)
    assert tokenizer.vocab_size == len(set(text))
    ids = tokenizer.encode(text)
    assert ids.dtype == np.int64 and ids.shape == (len(text),)
    assert ids.min() >= 0 and ids.max() == tokenizer.vocab_size - 1
    assert tokenizer.decode(ids) == text
    assert tokenizer.decode(tokenizer.encode("")) == ""
    with pytest.raises(ValueError, match="outside the vocabulary"):
        CharTokenizer("abc").encode("abz")
    with pytest.raises(ValueError, match=r"ids must lie in \[0, 3\)"):
        CharTokenizer("abc").decode([0, 3])


def test_lm_batch_targets_are_inputs_shifted_by_one():
    text = load_text_corpus(max_chars=5000)
    ids = CharTokenizer(text).encode(text)
    x, y = sample_lm_batch(ids, batch_size=16, seq_len=32, rng=0)
    assert x.shape == y.shape == (16, 32) and x.dtype == y.dtype == np.int64
    np.testing.assert_array_equal(x[:, 1:], y[:, :-1])
    # with ids equal to their positions, every target is its input's successor, up to the last token
    positions = np.arange(100)
    x, y = sample_lm_batch(positions, batch_size=500, seq_len=10, rng=1)
    np.testing.assert_array_equal(y, x + 1)
    assert x[:, 0].min() == 0 and y[:, -1].max() == 99  # every start is reachable, none overruns
    with pytest.raises(ValueError, match="need at least seq_len"):
        sample_lm_batch(np.arange(5), batch_size=1, seq_len=5)


def test_spirals_shapes_balance_and_seed():
    X, y = make_spirals(n_per_class=150, noise=0.05, seed=0)
    assert X.shape == (300, 2) and X.dtype == np.float32 and y.dtype == np.int64
    assert np.bincount(y).tolist() == [150, 150]
    assert np.abs(X).max() < 1.5
    np.testing.assert_array_equal(make_spirals(150, 0.05, 0)[0], X)
    assert not np.array_equal(make_spirals(150, 0.05, 1)[0], X)
    # the arms are the same curve rotated by half a turn: without noise, class 1 is -class 0
    X0, y0 = make_spirals(n_per_class=50, noise=0.0, seed=2)
    radius = np.hypot(X0[:, 0], X0[:, 1])
    angle = np.arctan2(X0[:, 1], X0[:, 0]) - 3 * np.pi * radius - np.pi * y0
    np.testing.assert_allclose(np.cos(angle), 1.0, atol=1e-5)
