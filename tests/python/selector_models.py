"""Tiny real models (random weights, built from config objects, nothing downloaded) and report
snapshots for the selector tests."""

from __future__ import annotations

import os
import re
import site

import torch

import tta

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SNAPSHOTS = os.path.join(HERE, "snapshots")


def llama(layers: int = 2):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    return LlamaForCausalLM(cfg).eval(), (torch.randint(0, 64, (1, 8)),), {"use_cache": False}


def gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=64, n_positions=32, n_embd=32, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0)
    return GPT2LMHeadModel(cfg).eval(), (torch.randint(0, 64, (1, 8)),), {"use_cache": False}


def resnet18():
    import torchvision

    torch.manual_seed(0)
    return torchvision.models.resnet18(num_classes=10).eval(), (torch.randn(2, 3, 32, 32),), {}


def export(build, decompose: bool = True):
    model, args, kwargs = build()
    ep = torch.export.export(model, args, kwargs=kwargs, strict=False)
    return model, args, kwargs, (ep.run_decompositions() if decompose else ep)


def logits(out):
    return out.logits if hasattr(out, "logits") else out


def assert_same_outputs(model, args, kwargs, result):
    """The rewritten program computes what the original model does, on CPU."""
    with torch.no_grad():
        torch.testing.assert_close(logits(result.program.module()(*args, **kwargs)), logits(model(*args, **kwargs)))


def tta_ops(result) -> list[str]:
    return [str(n.target) for n in result.program.graph_module.graph.nodes if getattr(n.target, "namespace", None) == "tta"]


def _portable(text: str) -> str:
    for d in sorted(set(site.getsitepackages() + [site.getusersitepackages()]), key=len, reverse=True):
        text = text.replace(d + os.sep, "<site-packages>/")
    # Line numbers inside installed packages change with their versions.
    text = re.sub(r"(<site-packages>/[^\s:]+\.py):\d+", r"\1:<line>", text)
    text = text.replace(ROOT + os.sep, "")
    return re.sub(r"python3\.\d+", "python3", text)


def assert_snapshot(name: str, result) -> None:
    """Compare the region report with tests/python/snapshots/<name>.txt; set
    TTA_UPDATE_SNAPSHOTS=1 to (re)write it."""
    text = _portable(str(result))
    path = os.path.join(SNAPSHOTS, name + ".txt")
    if os.environ.get("TTA_UPDATE_SNAPSHOTS") == "1":
        os.makedirs(SNAPSHOTS, exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        return
    assert os.path.exists(path), f"no snapshot {path}; run with TTA_UPDATE_SNAPSHOTS=1 to write it:\n{text}"
    with open(path) as f:
        want = f.read()
    assert text == want, f"report differs from {path} (TTA_UPDATE_SNAPSHOTS=1 to accept):\n{text}"


def rmsnorm_meta(x, w):
    # Checks the port order the kernel would see: (hidden states, weight).
    assert w.dim() == 1 and x.shape[-1] == w.shape[0], f"expected (x, weight), got {tuple(x.shape)}, {tuple(w.shape)}"
    return x.new_empty(x.shape)


rmsnorm = tta.custom_plugin(meta_impl=rmsnorm_meta, name="rmsnorm")
