#!/usr/bin/python3
"""Draws the training sample's loss curves (one CSV of per-step losses per
label) as a small self-contained SVG.

usage: plot_loss.py OUT.svg LABEL=losses.csv [LABEL=losses.csv ...]
"""
import sys

W, H, PAD = 560, 300, 48
COLOURS = ["#1f77b4", "#d62728", "#2ca02c"]


def main():
    out, series = sys.argv[1], []
    for arg in sys.argv[2:]:
        label, path = arg.split("=", 1)
        series.append((label, [float(v) for v in open(path).read().split()]))
    steps = max(len(v) for _, v in series)
    top = max(max(v) for _, v in series) * 1.05
    x = lambda i: PAD + (W - 2 * PAD) * i / max(1, steps - 1)
    y = lambda v: H - PAD + (2 * PAD - H) * v / top
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<line x1="{PAD}" y1="{H - PAD}" x2="{W - PAD}" y2="{H - PAD}" stroke="black"/>',
           f'<line x1="{PAD}" y1="{PAD}" x2="{PAD}" y2="{H - PAD}" stroke="black"/>',
           f'<text x="{W / 2}" y="{H - 12}" text-anchor="middle">optimizer step</text>',
           f'<text x="14" y="{H / 2}" transform="rotate(-90 14 {H / 2})" text-anchor="middle">training loss</text>',
           f'<text x="{W / 2}" y="24" text-anchor="middle" font-size="14">popc training sample: Adam, lr 0.02, batch 16</text>']
    for t in range(5):
        v = top * t / 4
        svg.append(f'<text x="{PAD - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.2f}</text>')
    for i in range(0, steps, max(1, steps // 6)):
        svg.append(f'<text x="{x(i):.1f}" y="{H - PAD + 16}" text-anchor="middle">{i}</text>')
    for k, (label, values) in enumerate(series):
        c = COLOURS[k % len(COLOURS)]
        pts = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(values))
        dash = ' stroke-dasharray="6 4"' if k else ""
        svg.append(f'<polyline points="{pts}" fill="none" stroke="{c}" stroke-width="2"{dash}/>')
        svg.append(f'<text x="{W - PAD - 4}" y="{PAD + 16 * (k + 1)}" text-anchor="end" fill="{c}">{label}</text>')
    svg.append("</svg>")
    with open(out, "w") as f:
        f.write("\n".join(svg) + "\n")


if __name__ == "__main__":
    main()
