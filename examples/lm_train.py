"""Train a small language model (embedding, a 4-layer nn.TransformerEncoder, a head) with
AdamW on random tokens: an unmodified script, in fp32, TF32 or under bf16 autocast.

    python examples/lm_train.py --precision fp32 --steps 80
    traceprobe profile --record-shapes --host-steps 10 -- examples/lm_train.py --steps 80
    traceprobe whatif runs/lm_train -s precision:bf16    # what bf16 autocast would buy

On a GPU: d=768, batch 32 x 256 tokens (the GPU bounds fp32; bf16 makes the host bound it);
on the CPU a tiny model, so that the script runs anywhere.
"""

import argparse

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn


class TinyLM(nn.Module):
    def __init__(self, vocab: int, d: int, layers: int = 4) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        layer = nn.TransformerEncoderLayer(d, 12 if d % 12 == 0 else 4, 4 * d, dropout=0.1,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(d, vocab)

    def forward(self, tok: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(self.emb(tok)))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=80)
    p.add_argument("--precision", choices=("fp32", "tf32", "bf16"), default="fp32")
    args = p.parse_args()
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    torch.backends.cuda.matmul.allow_tf32 = args.precision == "tf32"
    torch.backends.cudnn.allow_tf32 = args.precision == "tf32"
    vocab, d, batch, seq = (8192, 768, 32, 256) if cuda else (512, 48, 4, 32)
    torch.manual_seed(0)
    model = TinyLM(vocab, d).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    data = [torch.randint(0, vocab, (batch, seq + 1)).to(device) for _ in range(8)]
    model.train()
    for step in range(args.steps):
        tok = data[step % len(data)]
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.precision == "bf16"):
            logits = model(tok[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, vocab), tok[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print(f"step {step}: loss {loss.item():.3f}", flush=True)


if __name__ == "__main__":
    main()
