"""A GPT-style model small enough to train in plain Python, whose every tensor lives in device
memory allocated through rmm_rs: the proof of test_sleep.py that training goes on over a sleep
bit for bit (parameters and Adam state in a tag kept over the sleep, activations and gradients
in a tag whose contents are dropped).

One transformer block (token and position embeddings, one causal self-attention head with an
output projection, a tanh MLP, both with residual connections) and a language-model head, trained
with Adam on next-token prediction of a deterministic sequence. The arithmetic runs on the host
in Python floats (IEEE doubles, one fixed order of operations: the same inputs give the same bits
on every run); the tensors live on the device as float64 and go through rmmMemcpyAsync
(``DeviceBuffer.copy_to_host`` / ``copy_from_host``) at each use: the step reads the parameters
from the device, writes each layer's activations to device buffers and reads them back for the
backward pass, writes the gradients to buffers allocated for the step, and Adam reads
parameters, moments and gradients from the device and writes them back. So what the device holds
is what the next step computes with, on simulated devices and on a GPU alike.

No NumPy, no framework: ``TinyGPT(weights=..., scratch=...)`` takes two context-manager
factories, the allocation regions (``lambda: rmm_rs.sleep.region("weights", keep=True)``), and
allocates with ``rmm_rs.DeviceBuffer`` from the current resource inside them.
"""

from __future__ import annotations

import array
import math
import random
from contextlib import nullcontext
from typing import Callable, ContextManager, Dict, List, Optional, Sequence, Tuple

import rmm_rs

Region = Callable[[], ContextManager]


class DeviceTensor:
    """`n` float64 values in a DeviceBuffer from the current device resource."""

    __slots__ = ("n", "buffer")

    def __init__(self, n: int, values: Optional[Sequence[float]] = None) -> None:
        self.n = n
        self.buffer = rmm_rs.DeviceBuffer(size=8 * n)
        if values is not None:
            self.write(values)

    @property
    def ptr(self) -> int:
        return self.buffer.ptr

    def read(self) -> List[float]:
        host = array.array("d", bytes(8 * self.n))
        self.buffer.copy_to_host(memoryview(host).cast("B"))
        return host.tolist()

    def write(self, values: Sequence[float]) -> None:
        host = array.array("d", values)
        if len(host) != self.n:
            raise ValueError(f"{len(host)} values for a tensor of {self.n}")
        self.buffer.copy_from_host(memoryview(host).cast("B"))

    def tobytes(self) -> bytes:
        return self.buffer.tobytes()


def _mm(x: List[List[float]], w: Sequence[float], k: int, m: int) -> List[List[float]]:
    """Rows of x (each k long) times w (k x m, row-major)."""
    return [[sum(row[i] * w[i * m + j] for i in range(k)) for j in range(m)] for row in x]


def _mm_t(dy: List[List[float]], w: Sequence[float], k: int, m: int) -> List[List[float]]:
    """dy (rows of m) times w transposed: the gradient of x in y = x w."""
    return [[sum(row[j] * w[i * m + j] for j in range(m)) for i in range(k)] for row in dy]


def _acc_outer(dw: List[float], x: List[List[float]], dy: List[List[float]], k: int, m: int) -> None:
    """dw += x^T dy: the gradient of w in y = x w."""
    for i in range(k):
        for j in range(m):
            dw[i * m + j] += sum(x[r][i] * dy[r][j] for r in range(len(x)))


def _softmax(row: Sequence[float]) -> List[float]:
    top = max(row)
    e = [math.exp(v - top) for v in row]
    total = sum(e)
    return [v / total for v in e]


def _flat(rows: List[List[float]]) -> List[float]:
    return [v for row in rows for v in row]


def _rows(flat: List[float], width: int) -> List[List[float]]:
    return [flat[i:i + width] for i in range(0, len(flat), width)]


class Config:
    def __init__(self, vocabulary: int = 16, sequence: int = 8, width: int = 8, hidden: int = 16, batch: int = 4,
                 lr: float = 0.03, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8) -> None:
        self.vocabulary, self.sequence, self.width, self.hidden, self.batch = vocabulary, sequence, width, hidden, batch
        self.lr, self.beta1, self.beta2, self.eps = lr, beta1, beta2, eps


# The activations one sequence keeps for the backward pass: name -> width of a row.
ACTIVATIONS = ("h0", "q", "k", "v", "att", "a", "h1", "m", "h2", "probs")


def parameter_shapes(c: Config) -> List[Tuple[str, int]]:
    V, T, C, H = c.vocabulary, c.sequence, c.width, c.hidden
    return [("wte", V * C), ("wpe", T * C), ("wq", C * C), ("wk", C * C), ("wv", C * C), ("wo", C * C),
            ("w1", C * H), ("b1", H), ("w2", H * C), ("b2", C), ("head", C * V)]


def activation_width(c: Config, name: str) -> int:
    return {"att": c.sequence, "m": c.hidden, "probs": c.vocabulary}.get(name, c.width)


def forward(c: Config, p: Dict[str, List[float]], x: Sequence[int], y: Sequence[int]) -> Tuple[float, Dict[str, List[List[float]]]]:
    """The summed cross-entropy of one sequence and its activations (host arithmetic only)."""
    T, C, H, V = len(x), c.width, c.hidden, c.vocabulary
    h0 = [[p["wte"][x[t] * C + i] + p["wpe"][t * C + i] for i in range(C)] for t in range(T)]
    q, k, v = _mm(h0, p["wq"], C, C), _mm(h0, p["wk"], C, C), _mm(h0, p["wv"], C, C)
    scale = 1.0 / math.sqrt(C)
    att = []
    for t in range(T):
        weights = _softmax([sum(q[t][i] * k[s][i] for i in range(C)) * scale for s in range(t + 1)])
        att.append(weights + [0.0] * (T - t - 1))
    a = [[sum(att[t][s] * v[s][i] for s in range(t + 1)) for i in range(C)] for t in range(T)]
    o = _mm(a, p["wo"], C, C)
    h1 = [[h0[t][i] + o[t][i] for i in range(C)] for t in range(T)]
    z = _mm(h1, p["w1"], C, H)
    m = [[math.tanh(z[t][j] + p["b1"][j]) for j in range(H)] for t in range(T)]
    f = _mm(m, p["w2"], H, C)
    h2 = [[h1[t][i] + f[t][i] + p["b2"][i] for i in range(C)] for t in range(T)]
    probs = [_softmax(row) for row in _mm(h2, p["head"], C, V)]
    loss = sum(-math.log(probs[t][y[t]]) for t in range(T))
    return loss, {"h0": h0, "q": q, "k": k, "v": v, "att": att, "a": a, "h1": h1, "m": m, "h2": h2, "probs": probs}


def backward(c: Config, p: Dict[str, List[float]], x: Sequence[int], y: Sequence[int], acts: Dict[str, List[List[float]]],
             g: Dict[str, List[float]], scale_loss: float) -> None:
    """Adds the gradient of ``scale_loss * forward(...)[0]`` to `g` (host arithmetic only)."""
    T, C, H, V = len(x), c.width, c.hidden, c.vocabulary
    h0, q, k, v, att, a, h1, m, h2, probs = (acts[name] for name in ACTIVATIONS)
    dlogits = [[(probs[t][j] - (1.0 if j == y[t] else 0.0)) * scale_loss for j in range(V)] for t in range(T)]
    _acc_outer(g["head"], h2, dlogits, C, V)
    dh2 = _mm_t(dlogits, p["head"], C, V)
    for t in range(T):
        for i in range(C):
            g["b2"][i] += dh2[t][i]
    _acc_outer(g["w2"], m, dh2, H, C)
    dm = _mm_t(dh2, p["w2"], H, C)
    dz = [[dm[t][j] * (1.0 - m[t][j] * m[t][j]) for j in range(H)] for t in range(T)]
    for t in range(T):
        for j in range(H):
            g["b1"][j] += dz[t][j]
    _acc_outer(g["w1"], h1, dz, C, H)
    dh1 = [[dh2[t][i] + back for i, back in enumerate(row)] for t, row in enumerate(_mm_t(dz, p["w1"], C, H))]
    _acc_outer(g["wo"], a, dh1, C, C)
    da = _mm_t(dh1, p["wo"], C, C)
    scale = 1.0 / math.sqrt(C)
    dq = [[0.0] * C for _ in range(T)]
    dk = [[0.0] * C for _ in range(T)]
    dv = [[0.0] * C for _ in range(T)]
    for t in range(T):
        datt = [sum(da[t][i] * v[s][i] for i in range(C)) for s in range(t + 1)]
        for s in range(t + 1):
            for i in range(C):
                dv[s][i] += att[t][s] * da[t][i]
        mean = sum(att[t][s] * datt[s] for s in range(t + 1))
        for s in range(t + 1):
            dscore = att[t][s] * (datt[s] - mean) * scale
            for i in range(C):
                dq[t][i] += dscore * k[s][i]
                dk[s][i] += dscore * q[t][i]
    dh0 = [row[:] for row in dh1]
    for name, d in (("wq", dq), ("wk", dk), ("wv", dv)):
        _acc_outer(g[name], h0, d, C, C)
        for t, row in enumerate(_mm_t(d, p[name], C, C)):
            for i in range(C):
                dh0[t][i] += row[i]
    for t in range(T):
        for i in range(C):
            g["wte"][x[t] * C + i] += dh0[t][i]
            g["wpe"][t * C + i] += dh0[t][i]


class Batches:
    """Windows of a deterministic token sequence (each token a function of the one before, with
    rare noise), drawn by a seeded generator."""

    def __init__(self, c: Config, seed: int = 1, length: int = 256) -> None:
        rng = random.Random(seed)
        text = [rng.randrange(c.vocabulary)]
        for _ in range(length - 1):
            text.append(rng.randrange(c.vocabulary) if rng.random() < 0.05 else (5 * text[-1] + 3) % c.vocabulary)
        self.c, self.text, self.rng = c, text, random.Random(seed + 1)

    def next(self) -> List[Tuple[List[int], List[int]]]:
        T = self.c.sequence
        batch = []
        for _ in range(self.c.batch):
            start = self.rng.randrange(len(self.text) - T - 1)
            window = self.text[start:start + T + 1]
            batch.append((window[:-1], window[1:]))
        return batch


class TinyGPT:
    """The model and its Adam state in device memory: parameters and both moments allocated
    inside `weights()`, the activation workspace (one set of buffers per sequence of the
    batch, kept for the model's life, as an activation arena) and each step's gradients inside
    `scratch()`."""

    def __init__(self, c: Config, weights: Region = nullcontext, scratch: Region = nullcontext, seed: int = 0) -> None:
        self.c, self.scratch, self.steps = c, scratch, 0
        rng = random.Random(seed)
        shapes = parameter_shapes(c)
        with weights():
            self.params = {name: DeviceTensor(n, [0.0] * n if name.startswith("b") else [rng.gauss(0.0, 0.3) for _ in range(n)])
                           for name, n in shapes}
            self.m = {name: DeviceTensor(n, [0.0] * n) for name, n in shapes}
            self.v = {name: DeviceTensor(n, [0.0] * n) for name, n in shapes}
        with scratch():
            self.acts = [{name: DeviceTensor(c.sequence * activation_width(c, name)) for name in ACTIVATIONS}
                         for _ in range(c.batch)]

    def tensors(self) -> List[Tuple[str, DeviceTensor]]:
        """Every tensor the model holds, named."""
        named = [(f"param.{n}", t) for n, t in self.params.items()] + [(f"adam_m.{n}", t) for n, t in self.m.items()]
        named += [(f"adam_v.{n}", t) for n, t in self.v.items()]
        named += [(f"act{b}.{n}", t) for b, acts in enumerate(self.acts) for n, t in acts.items()]
        return named

    def state_bytes(self) -> bytes:
        """Parameters and Adam moments as they are in device memory."""
        return b"".join(t.tobytes() for group in (self.params, self.m, self.v) for t in group.values())

    def step(self, batch: List[Tuple[List[int], List[int]]]) -> float:
        """One Adam step on `batch`; the mean cross-entropy before it."""
        c = self.c
        p = {name: t.read() for name, t in self.params.items()}
        total = 0.0
        for b, (x, y) in enumerate(batch):
            loss, acts = forward(c, p, x, y)
            total += loss
            for name in ACTIVATIONS:
                self.acts[b][name].write(_flat(acts[name]))
        scale = 1.0 / (len(batch) * c.sequence)
        g = {name: [0.0] * t.n for name, t in self.params.items()}
        for b, (x, y) in enumerate(batch):
            acts = {name: _rows(self.acts[b][name].read(), activation_width(c, name)) for name in ACTIVATIONS}
            backward(c, p, x, y, acts, g, scale)
        with self.scratch():
            grads = {name: DeviceTensor(len(values), values) for name, values in g.items()}
        self.steps += 1
        t = self.steps
        correction1, correction2 = 1.0 - c.beta1 ** t, 1.0 - c.beta2 ** t
        for name, param in self.params.items():
            w, gm, gv, grad = param.read(), self.m[name].read(), self.v[name].read(), grads[name].read()
            for i in range(len(w)):
                gm[i] = c.beta1 * gm[i] + (1.0 - c.beta1) * grad[i]
                gv[i] = c.beta2 * gv[i] + (1.0 - c.beta2) * grad[i] * grad[i]
                w[i] -= c.lr * (gm[i] / correction1) / (math.sqrt(gv[i] / correction2) + c.eps)
            param.write(w)
            self.m[name].write(gm)
            self.v[name].write(gv)
        del grads  # the step's gradients go back to their tag
        return total * scale
