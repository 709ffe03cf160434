"""Data utilities: feature scaling, splits, mini-batches and small bundled data sets.

Everything here works on plain numpy arrays and needs nothing but numpy, so the
examples and experiments can prepare data without touching the autograd engine.
The data sets ship with Python or scikit-learn: nothing is downloaded.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

RandomLike = int | np.random.Generator | None


# --------------------------------------------------------------------------- scaling


class StandardScaler:
    """Standardize features to zero mean and unit variance, like scikit-learn's.

    ``fit`` learns each column's mean and population standard deviation (ddof=0);
    ``transform`` computes ``(X - mean_) / scale_``. A constant column gets
    ``scale_ = 1`` so it maps to zeros instead of dividing by zero. Statistics are
    computed in float64 with a two-pass algorithm (mean first, then the mean of
    squared deviations), which stays accurate when |mean| >> std, where the
    one-pass E[x^2] - E[x]^2 cancels catastrophically. Float32 input gives float32
    output; other input is converted to float64.

    Unlike scikit-learn, NaN and infinity are rejected rather than ignored.
    """

    def __init__(self, with_mean: bool = True, with_std: bool = True) -> None:
        self.with_mean = with_mean
        self.with_std = with_std

    def fit(self, X: Any) -> StandardScaler:
        """Learn ``mean_``, ``var_``, ``scale_`` and ``n_samples_seen_`` from X (n_samples, n_features)."""
        X = _as_float_2d(X, "X")
        n_samples = X.shape[0]
        if n_samples == 0:
            raise ValueError("X must contain at least one sample, got shape (0, n_features)")
        X64 = X.astype(np.float64, copy=False)
        self.n_features_in_ = X.shape[1]
        self.n_samples_seen_ = n_samples
        self.mean_ = None
        self.var_ = None
        self.scale_ = None
        if self.with_mean or self.with_std:
            self.mean_ = X64.mean(axis=0)
        if self.with_std:
            self.var_ = np.mean((X64 - self.mean_) ** 2, axis=0)
            self.scale_ = np.sqrt(self.var_)
            self.scale_[_is_constant(self.var_, self.mean_, n_samples)] = 1.0
        return self

    def transform(self, X: Any) -> np.ndarray:
        """Return standardized ``X`` as a new array; needs ``fit`` first."""
        out = self._check_transform_input(X).copy()
        if self.with_mean:
            out -= self.mean_  # float64 statistics; the result is rounded once to out's dtype
        if self.with_std:
            out /= self.scale_
        return out

    def fit_transform(self, X: Any) -> np.ndarray:
        """``fit(X)`` then ``transform(X)``."""
        return self.fit(X).transform(X)

    def inverse_transform(self, X: Any) -> np.ndarray:
        """Map standardized data back to the original units: ``X * scale_ + mean_``."""
        out = self._check_transform_input(X).copy()
        if self.with_std:
            out *= self.scale_
        if self.with_mean:
            out += self.mean_
        return out

    def _check_transform_input(self, X: Any) -> np.ndarray:
        if not hasattr(self, "n_features_in_"):
            raise ValueError(
                "This StandardScaler is not fitted yet: call fit(X) or fit_transform(X) first"
            )
        X = _as_float_2d(X, "X")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but this StandardScaler was fitted "
                f"with {self.n_features_in_} features"
            )
        return X

    def __repr__(self) -> str:
        return f"StandardScaler(with_mean={self.with_mean}, with_std={self.with_std})"


def _as_float_2d(X: Any, name: str) -> np.ndarray:
    """Return ``X`` as a finite 2-D float array: float32 stays float32, the rest becomes float64."""
    try:
        X = np.asarray(X)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{name} must be array-like, got {type(X).__name__}: {error}") from None
    if X.ndim != 2:
        raise ValueError(
            f"{name} must be 2-D (n_samples, n_features), got {X.ndim}-D array of shape {X.shape}; "
            "use X.reshape(-1, 1) for a single feature or X.reshape(1, -1) for a single sample"
        )
    if X.dtype.kind not in "biuf":  # bool, signed/unsigned int, float
        raise TypeError(f"{name} must hold real numbers, got dtype {X.dtype}")
    X = X.astype(np.float32 if X.dtype == np.float32 else np.float64, copy=False)
    if not np.isfinite(X).all():
        raise ValueError(f"{name} contains NaN or infinity; remove or impute them first")
    return X


def _is_constant(var: np.ndarray, mean: np.ndarray, n_samples: int) -> np.ndarray:
    """True where ``var`` is within float64 rounding error of zero, so the column is constant.

    Same bound as scikit-learn: the mean of n equal values can be off by about
    n * eps * |mean|, which leaves a tiny positive variance for a constant column.
    """
    eps = np.finfo(np.float64).eps
    return var <= n_samples * eps * var + (n_samples * mean * eps) ** 2


# --------------------------------------------------------------------------- splits and batches


def train_test_split(
    *arrays: Any,
    test_size: float | int = 0.25,
    seed: RandomLike = 0,
    stratify: Any = None,
) -> list[np.ndarray]:
    """Shuffle and split aligned arrays into ``[a_train, a_test, b_train, b_test, ...]``.

    Mirrors scikit-learn's function of the same name (same output order; ``seed``
    plays ``random_state``). ``test_size`` is a fraction in (0, 1) or a sample
    count. With ``stratify=labels`` each class keeps its share in both parts.
    """
    arrays_np = _aligned_arrays(arrays)
    n = len(arrays_np[0])
    n_test = _test_count(test_size, n)
    rng = np.random.default_rng(seed)
    if stratify is None:
        order = rng.permutation(n)
        test_idx, train_idx = order[:n_test], order[n_test:]
    else:
        train_idx, test_idx = _stratified_indices(np.asarray(stratify), n, n_test, rng)
    return [part for a in arrays_np for part in (a[train_idx], a[test_idx])]


def _test_count(test_size: float | int, n: int) -> int:
    if isinstance(test_size, (int, np.integer)) and not isinstance(test_size, bool):
        n_test = int(test_size)
    elif isinstance(test_size, (float, np.floating)) and 0.0 < test_size < 1.0:
        n_test = int(np.ceil(test_size * n))
    else:
        raise ValueError(f"test_size must be a float in (0, 1) or an int, got {test_size!r}")
    if not 0 < n_test < n:
        raise ValueError(
            f"test_size={test_size!r} leaves {n_test} of {n} samples for testing; "
            "both the train and the test part need at least one sample"
        )
    return n_test


def _stratified_indices(
    labels: np.ndarray, n: int, n_test: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Split each class in proportion, handing rounding leftovers to the largest remainders."""
    if labels.shape[:1] != (n,):
        raise ValueError(f"stratify must have one label per sample ({n}), got shape {labels.shape}")
    classes, class_of, counts = np.unique(labels, return_inverse=True, return_counts=True)
    if counts.min() < 2:
        raise ValueError(
            f"stratify: class {classes[counts.argmin()].item()!r} has only {counts.min()} sample; "
            "every class needs at least 2 to appear in both parts"
        )
    exact = counts * n_test / n
    per_class = np.floor(exact).astype(np.int64)
    leftover = n_test - per_class.sum()
    per_class[np.argsort(per_class - exact, kind="stable")[:leftover]] += 1
    train, test = [], []
    for k in range(len(classes)):
        members = rng.permutation(np.flatnonzero(class_of == k))
        test.append(members[: per_class[k]])
        train.append(members[per_class[k] :])
    return rng.permutation(np.concatenate(train)), rng.permutation(np.concatenate(test))


def minibatches(
    *arrays: Any,
    batch_size: int,
    shuffle: bool = True,
    rng: RandomLike = None,
    drop_last: bool = False,
) -> Iterator[tuple[np.ndarray, ...]]:
    """Yield tuples of aligned mini-batches covering every sample once (one epoch).

    ``rng`` is a seed or a ``np.random.Generator``; pass the same Generator every
    epoch to get a fresh order each time. ``drop_last`` skips a final short batch.
    """
    arrays_np = _aligned_arrays(arrays)
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)):
        raise TypeError(f"batch_size must be an int, got {type(batch_size).__name__}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    n = len(arrays_np[0])
    order = np.random.default_rng(rng).permutation(n) if shuffle else np.arange(n)
    stop = n - n % batch_size if drop_last else n
    for start in range(0, stop, batch_size):
        idx = order[start : start + batch_size]
        yield tuple(a[idx] for a in arrays_np)


def _aligned_arrays(arrays: Sequence[Any]) -> list[np.ndarray]:
    """Convert to numpy and check that every array has the same number of samples."""
    if not arrays:
        raise ValueError("at least one array is required")
    arrays_np = [np.asarray(a) for a in arrays]
    if any(a.ndim == 0 for a in arrays_np):
        raise ValueError("arrays must have a sample axis, got a 0-d array (a scalar)")
    lengths = [len(a) for a in arrays_np]
    if len(set(lengths)) > 1:
        raise ValueError(f"arrays must have the same number of samples, got lengths {lengths}")
    return arrays_np


# --------------------------------------------------------------------------- data sets


def load_digits(
    seed: int = 0, test_size: float = 0.25
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """scikit-learn's bundled 8x8 digits, split into ``(X_train, y_train, X_test, y_test)``.

    1,797 images as float32 of shape (N, 1, 8, 8) scaled to [0, 1] (pixel / 16),
    labels int64 in 0..9, split stratified by label with a fixed seed. No download:
    the data ship inside scikit-learn, which is imported only here.
    """
    try:
        from sklearn.datasets import load_digits as sklearn_load_digits
    except ImportError:
        raise ImportError(
            "load_digits needs scikit-learn: pip install scikit-learn "
            "(or pip install 'tinynorm[examples]')"
        ) from None
    digits = sklearn_load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
    labels = digits.target.astype(np.int64)
    X_train, X_test, y_train, y_test = train_test_split(
        images, labels, test_size=test_size, seed=seed, stratify=labels
    )
    return X_train, y_train, X_test, y_test


def load_mnist1d() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """MNIST-1D (Greydanus & Kobak, ICML 2024), split into ``(X_train, y_train, X_test, y_test)``.

    10 digit templates turned into 1-D signals of length 40 by random padding, translation, shear,
    scaling and correlated noise: 4,000 training and 1,000 test signals (float32, (N, 40), the whole
    set standardized by the package), labels int64 in 0..9. Generated locally by the ``mnist1d``
    package's ``make_dataset`` with its published default arguments and seed (no download: its
    ``get_dataset`` would fetch a copy, this does not). It is far harder than the 8x8 digits: linear
    models reach ~68% accuracy, small CNNs ~94-98%. The package seeds numpy's global generator;
    the generator's state is restored afterwards.
    """
    try:
        from mnist1d.data import get_dataset_args, make_dataset
    except ImportError:
        raise ImportError("load_mnist1d needs the mnist1d package: pip install mnist1d "
                          "(or pip install 'tinynorm[examples]')") from None
    state = np.random.get_state()
    try:
        data = make_dataset(get_dataset_args())
    finally:
        np.random.set_state(state)
    return (data["x"].astype(np.float32), data["y"].astype(np.int64),
            data["x_test"].astype(np.float32), data["y_test"].astype(np.int64))


def load_text_corpus(max_chars: int | None = None) -> str:
    """English text shipped with Python: the pydoc topic help (~465 KB, no download).

    The values of ``pydoc_data.topics.topics`` joined in sorted-key order, so the
    text is the same on every run; ``max_chars`` keeps only the beginning.
    """
    from pydoc_data.topics import topics

    text = "".join(topics[key] for key in sorted(topics))
    if max_chars is not None:
        if max_chars < 1:
            raise ValueError(f"max_chars must be >= 1 or None, got {max_chars}")
        text = text[:max_chars]
    return text


class CharTokenizer:
    """Map each distinct character of a text to an integer id (sorted by code point)."""

    def __init__(self, text: str) -> None:
        if not isinstance(text, str) or not text:
            raise ValueError("CharTokenizer needs a non-empty str to build its vocabulary")
        self.chars: list[str] = sorted(set(text))
        self._id_of = {ch: i for i, ch in enumerate(self.chars)}

    @property
    def vocab_size(self) -> int:
        """Number of distinct characters."""
        return len(self.chars)

    def encode(self, text: str) -> np.ndarray:
        """Return the ids of ``text`` as an int64 array."""
        unknown = set(text) - self._id_of.keys()
        if unknown:
            raise ValueError(f"text contains characters outside the vocabulary: {sorted(unknown)!r}")
        return np.array([self._id_of[ch] for ch in text], dtype=np.int64)

    def decode(self, ids: Any) -> str:
        """Return the text of a sequence of ids."""
        ids = np.asarray(ids)
        if ids.ndim != 1 or not (ids.size == 0 or np.issubdtype(ids.dtype, np.integer)):
            raise ValueError(
                f"ids must be a 1-D sequence of integers, got shape {ids.shape}, dtype {ids.dtype}"
            )
        if ids.size and (ids.min() < 0 or ids.max() >= self.vocab_size):
            raise ValueError(f"ids must lie in [0, {self.vocab_size}), got range [{ids.min()}, {ids.max()}]")
        return "".join(self.chars[i] for i in ids.tolist())

    def __repr__(self) -> str:
        return f"CharTokenizer(vocab_size={self.vocab_size})"


def sample_lm_batch(
    ids: Any, batch_size: int, seq_len: int, rng: RandomLike = None
) -> tuple[np.ndarray, np.ndarray]:
    """Draw random windows for next-character prediction: ``y`` is ``x`` shifted by one.

    Returns int64 arrays ``x`` and ``y`` of shape (batch_size, seq_len) with
    ``y[:, t] == ids[start + t + 1]`` for ``x[:, t] == ids[start + t]``.
    """
    ids = np.asarray(ids)
    if ids.ndim != 1:
        raise ValueError(f"ids must be 1-D, got shape {ids.shape}")
    if batch_size < 1 or seq_len < 1:
        raise ValueError(f"batch_size and seq_len must be >= 1, got {batch_size} and {seq_len}")
    if len(ids) < seq_len + 1:
        raise ValueError(f"ids has {len(ids)} tokens, need at least seq_len + 1 = {seq_len + 1}")
    starts = np.random.default_rng(rng).integers(0, len(ids) - seq_len, size=batch_size)
    window = starts[:, None] + np.arange(seq_len)
    return ids[window].astype(np.int64), ids[window + 1].astype(np.int64)


def make_spirals(
    n_per_class: int = 100, noise: float = 0.1, seed: RandomLike = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaved spirals: a small task no linear model can solve.

    Returns ``X`` float32 of shape (2 * n_per_class, 2) with coordinates in about
    [-1, 1], plus Gaussian noise of std ``noise``, and labels ``y`` int64 in {0, 1},
    shuffled.
    """
    if n_per_class < 1:
        raise ValueError(f"n_per_class must be >= 1, got {n_per_class}")
    if noise < 0:
        raise ValueError(f"noise must be >= 0, got {noise}")
    rng = np.random.default_rng(seed)
    radius = np.sqrt(rng.uniform(0.0, 1.0, size=2 * n_per_class))  # sqrt: even density along the arm
    label = np.repeat(np.arange(2, dtype=np.int64), n_per_class)
    angle = 3.0 * np.pi * radius + np.pi * label  # 1.5 turns; the second arm is rotated by half a turn
    X = np.column_stack([radius * np.cos(angle), radius * np.sin(angle)])
    X += rng.normal(0.0, noise, size=X.shape)
    order = rng.permutation(len(X))
    return X[order].astype(np.float32), label[order]
