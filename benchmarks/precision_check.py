"""bf16 against fp32 in Breakout's update: how far the trunk's bfloat16 arithmetic turns the gradient of a
trained agent's loss, beside how far the minibatch's sampling turns it anyway.

Issue 27's 40M-frame runs trained in bf16 (`--precision auto` on a CPU with AVX512-BF16); the agents they are
compared with (SB3's, CleanRL's) trained in float32. This measures the difference where it acts, on the agent
of a checkpoint (or a freshly initialized one) and rollouts it collects (in float32, the checkpoint's N envs x T
steps, sync):

- forward: |V_bf16 - V_fp32| (mean, and beside the mean |V|), KL(pi_fp32 || pi_bf16), and how often the most
  probable action differs, over each rollout's samples;
- gradient: each minibatch's gradient of the script's loss at the start of an update (r_t = 1, V = V_old: the
  clipped surrogate and the clipped value loss, the entropy bonus, the checkpoint's coefficients), computed
  with the trunk in bf16 and in fp32 from the same weights: their cosine, the relative size of their
  difference, and the lowest cosine of one parameter tensor;
- the same two for the whole rollout's gradient: where the rounding errors of the samples are independent, they
  partly cancel there, where a bias of bf16 would not; and the cosine between two rollouts' differences (bf16
  minus fp32, of the whole rollout's gradient): near 0, the rounding pushes each update its own way and the
  pushes cancel over the updates; near 1, it pushes every update the same way;
- the sampling noise beside it: the cosine of the same minibatch's fp32 gradient with the whole rollout's.

A bf16 cosine far closer to 1 than the sampling one says the rounding turns the update less than the choice of
minibatch does at every step.

Usage, from the repository root:
    python -m benchmarks.precision_check --checkpoint runs/<run>/checkpoint.pt [--rollouts 4]
"""

from __future__ import annotations

import dataclasses
import statistics
import sys

import torch
import tyro

import ppo_breakout_atari as breakout


@dataclasses.dataclass
class Options:
    checkpoint: str | None = None
    """a checkpoint or policy file of ppo_breakout_atari.py; none: a freshly initialized agent"""
    rollouts: int = 4
    """rollouts measured, one after another, after one that warms the games up (not measured)"""
    seed: int = 1
    """seeds the envs and torch (the minibatches, the sampled actions)"""
    num_steps: int | None = None
    """T, steps per env in a rollout; none: the checkpoint's (the minibatches shrink with it, their number stays)"""


def cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    """cos of the angle between two vectors: 1 = the same direction."""
    return float(torch.dot(a, b) / (a.norm() * b.norm()))


def flat(gradients: list[torch.Tensor]) -> torch.Tensor:
    """Per-parameter gradients as one vector."""
    return torch.cat([g.flatten() for g in gradients])


def loss_gradients(agent: breakout.Agent, bf16: bool, obs: torch.Tensor, actions: torch.Tensor,
                   advantages: torch.Tensor, returns: torch.Tensor, args: breakout.Args) -> list[torch.Tensor]:
    """The gradient of the script's loss for one batch at the start of an update, per parameter tensor, with the
    trunk in bf16 or fp32 (same weights)."""
    agent.bf16 = bf16
    agent.zero_grad()
    _, logprob, entropy, value = agent.get_action_and_value(agent.inputs(obs), actions)
    ratio = (logprob - logprob.detach()).exp()  # r_t = 1 at the start of an update, with its gradient
    if args.norm_adv:
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    pg_loss = breakout.clipped_surrogate_loss(ratio, advantages, args.clip_coef)
    if args.clip_vloss:
        v_loss = breakout.clipped_value_loss(value, value.detach(), returns, args.vf_clip_coef)
    else:
        v_loss = 0.5 * ((value - returns) ** 2).mean()
    (pg_loss + args.vf_coef * v_loss - args.ent_coef * entropy.mean()).backward()
    return [p.grad.detach().clone() for p in agent.parameters()]


def forward_gap(agent: breakout.Agent, obs: torch.Tensor) -> dict:
    """V and pi with the trunk in bf16 against fp32, over a batch."""
    with torch.inference_mode():
        out = {}
        for bf16 in (False, True):
            agent.bf16 = bf16
            hidden = agent.features(obs)
            out[bf16] = agent.actor(hidden).log_softmax(-1), agent.critic(hidden).squeeze(-1)
    (log_pi32, v32), (log_pi16, v16) = out[False], out[True]
    return {
        "value_gap": float((v16 - v32).abs().mean()), "value_size": float(v32.abs().mean()),
        "kl": float((log_pi32.exp() * (log_pi32 - log_pi16)).sum(-1).mean()),
        "argmax_differs": float((log_pi32.argmax(-1) != log_pi16.argmax(-1)).float().mean()),
    }


def measure(options: Options) -> tuple[list[dict], list[float]]:
    """One row per minibatch of each measured rollout (its forward gaps repeated on each of its rows), and the
    cosines between the rollouts' bf16 differences, one per pair of rollouts."""
    if options.checkpoint:
        ckpt = breakout.load_checkpoint(options.checkpoint)
        saved = {k: v for k, v in ckpt["args"].items() if k in {f.name for f in dataclasses.fields(breakout.Args)}}
        args = breakout.Args(**saved)
    else:
        ckpt, args = None, breakout.Args()
    args = dataclasses.replace(args, vectorization_mode="sync", seed=options.seed)
    if options.num_steps:
        args.minibatch_size = args.minibatch_size * options.num_steps // args.num_steps
        args.num_steps = options.num_steps
    args.batch_size = args.num_envs * args.num_steps
    torch.manual_seed(options.seed)
    with breakout.make_env(args) as env:
        agent = breakout.Agent(env, args.hidden_size, bf16=False)
    if ckpt:
        breakout.restore_agent(agent, ckpt, options.checkpoint)
    envs = breakout.make_envs(args)
    rollout = breakout.Rollout(args.num_steps, args.num_envs, envs.single_observation_space.shape)
    next_obs, _ = envs.reset(seed=options.seed)
    rows, differences = [], []
    for index in range(options.rollouts + 1):
        agent.bf16 = False  # the data: collected and valued in fp32, the same for both precisions
        next_obs, last_value, _ = breakout.collect_rollout(envs, agent, next_obs, rollout)
        if index == 0:
            continue  # the warm-up: the games under way, not all at their first frames
        advantages = breakout.compute_gae(rollout.rewards, rollout.values, rollout.dones, rollout.final_values,
                                          last_value, args.gamma, args.gae_lambda)
        batch = [torch.as_tensor(x).flatten(0, 1)  # obs, actions, advantages, returns
                 for x in (rollout.obs, rollout.actions, advantages, advantages + rollout.values)]
        gaps = forward_gap(agent, batch[0])
        whole, whole16 = (flat(loss_gradients(agent, bf16, *batch, args)) for bf16 in (False, True))
        gaps["cos_bf16_whole"] = cosine(whole16, whole)
        gaps["rel_gap_whole"] = float((whole16 - whole).norm() / whole.norm())
        differences.append(whole16 - whole)
        for mb in torch.randperm(args.batch_size).split(args.minibatch_size):
            g32, g16 = (loss_gradients(agent, bf16, *(x[mb] for x in batch), args) for bf16 in (False, True))
            flat32, flat16 = flat(g32), flat(g16)
            layers = [(cosine(a.flatten(), b.flatten()), name)
                      for (name, _), a, b in zip(agent.named_parameters(), g16, g32) if b.norm() > 0]
            rows.append({
                "rollout": index, **gaps,
                "cos_bf16": cosine(flat16, flat32), "rel_gap": float((flat16 - flat32).norm() / flat32.norm()),
                "worst_layer": min(layers), "cos_sampling": cosine(flat32, whole),
            })
    envs.close()
    pairs = [cosine(a, b) for i, a in enumerate(differences) for b in differences[i + 1:]]
    return rows, pairs


def spread(values: list[float], spec: str) -> str:
    """median (min - max)"""
    return f"{statistics.median(values):{spec}} ({min(values):{spec}} - {max(values):{spec}})"


def report(rows: list[dict], pairs: list[float]) -> str:
    per_rollout = {row["rollout"]: row for row in rows}.values()  # the forward gaps: one per rollout
    worst = min(row["worst_layer"] for row in rows)
    column = {key: spread([row[key] for row in rows], ".4f") for key in ("cos_bf16", "cos_sampling", "rel_gap")}
    lines = [
        f"{len(rows)} minibatches of {len(per_rollout)} rollouts; median (min - max) over them",
        "| measure | bf16 against fp32 | a minibatch against its rollout (fp32) |",
        "|---|---|---|",
        f"| gradient cosine | {column['cos_bf16']} | {column['cos_sampling']} |",
        f"| gradient difference / fp32 gradient | {column['rel_gap']} | - |",
        f"| lowest cosine of one parameter tensor | {worst[0]:.4f} ({worst[1]}) | - |",
    ]
    for key, label in (("cos_bf16_whole", "gradient cosine, whole rollout"),
                       ("rel_gap_whole", "gradient difference / fp32 gradient, whole rollout"),
                       ("value_gap", "mean |V_bf16 - V_fp32|"), ("value_size", "mean |V_fp32|"),
                       ("kl", "KL(pi_fp32 || pi_bf16)"), ("argmax_differs", "most probable action differs")):
        lines.append(f"| {label} (per rollout) | {spread([row[key] for row in per_rollout], '.4g')} | - |")
    if pairs:
        lines.append(f"| cosine between two rollouts' bf16 differences (per pair) | {spread(pairs, '.4g')} | - |")
    return "\n".join(lines)


def main() -> None:
    options = tyro.cli(Options, description=__doc__)
    if options.rollouts < 1 or options.num_steps is not None and options.num_steps < 4:
        print("precision_check.py: error: --rollouts must be at least 1 and --num-steps at least 4", file=sys.stderr)
        sys.exit(2)
    print(report(*measure(options)))


if __name__ == "__main__":
    main()
