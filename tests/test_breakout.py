"""ppo_breakout_atari.py: the wrapper stack reports whole games, the CNN agent's shapes, the script end to end
from its command line (train, resume, play with MP4, Ctrl-C, bad input), and two torchrun ranks on the CPU
ending an update with identical parameters."""

import numpy as np
import pytest
import torch

import ppo_breakout_atari as ppo
from conftest import (CLEANRL_TAGS, SCHEDULE, ctrl_c_saves_a_checkpoint, expect_unreadable_checkpoints_refused,
                      expect_usage_error, run_dirs, run_script, scalars, two_torchrun_ranks)

STOP_MESSAGE = "Ctrl-C: stopping at the next step and saving the last complete update"
SCRIPT = "ppo_breakout_atari.py"
# A tiny configuration: 2 envs x 128 steps = 256 samples per update, 2 updates, 1 epoch, on the CPU.
TINY = ["--total-timesteps", "512", "--num-envs", "2", "--num-steps", "128", "--minibatch-size", "128",
        "--update-epochs", "1", "--checkpoint-every", "1", "--no-cuda", "--vectorization-mode", "sync"]


def test_the_env_reports_whole_games_with_the_real_score():
    env = ppo.make_env(ppo.Args())
    obs, _ = env.reset(seed=0)
    assert obs.shape == env.observation_space.shape == (4, 84, 84) and obs.dtype == np.uint8
    rng = np.random.default_rng(0)
    lives_lost, clipped_sum = 0, 0.0
    for _ in range(20_000):
        obs, reward, terminated, truncated, info = env.step(int(rng.integers(4)))
        clipped_sum += reward
        assert reward in (-1.0, 0.0, 1.0)
        if "episode" in info:  # the game is over: every life is gone
            break
        if terminated or truncated:  # a lost life ends the training episode; the game goes on after a reset
            lives_lost += 1
            obs, _ = env.reset()
    assert lives_lost == 4 and terminated  # the fifth life's end is the game's end
    # Breakout's bricks are worth 1 to 7 points: the reported score is the real one, never below the count
    # of bricks hit (the sum of the sign-clipped rewards the agent trains on).
    assert info["episode"]["r"] >= clipped_sum >= 0
    assert info["episode"]["l"] > 4 * 100  # in frames


def test_agent_shapes_and_shared_trunk():
    torch.manual_seed(0)
    agent = ppo.Agent(ppo.make_env(ppo.Args()), hidden_size=512)
    x = torch.randint(0, 256, (5, 4, 84, 84), dtype=torch.uint8)
    action, log_prob, entropy, value = agent.get_action_and_value(x)
    assert action.shape == log_prob.shape == entropy.shape == value.shape == (5,)
    torch.testing.assert_close(value, agent.get_value(x))
    assert entropy.min().item() > 0.99 * np.log(4)  # the 0.01-gain policy head starts near uniform
    # One trunk feeds both heads: a value loss moves the features the policy reads.
    agent.get_value(x).sum().backward()
    assert agent.trunk[0].weight.grad.abs().sum() > 0 and agent.actor.weight.grad is None


def test_bf16_trunk_keeps_the_ratio_at_one_and_stays_close_to_fp32():
    """--precision bf16 runs the trunk in bfloat16: its features are bf16 numbers handed on as float32, a
    rollout's log-probs (batches of N envs) and the update's (minibatches) come from the same network, so
    the ratio starts at 1; and the policy is the float32 one up to bf16 rounding."""
    torch.manual_seed(0)
    env = ppo.make_env(ppo.Args())
    fp32 = ppo.Agent(env, hidden_size=512)
    bf16 = ppo.Agent(env, hidden_size=512, bf16=True)
    bf16.load_state_dict(fp32.state_dict())
    torch.nn.init.orthogonal_(fp32.actor.weight, 1.0)  # a policy head that has learned something
    bf16.actor.weight.data.copy_(fp32.actor.weight)
    frames = []  # real frames: a random game
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(64):
        frames.append(obs)
        obs, _, terminated, truncated, _ = env.step(int(rng.integers(4)))
        if terminated or truncated:
            obs, _ = env.reset()
    x = torch.as_tensor(np.stack(frames))
    actions = torch.as_tensor(rng.integers(4, size=64))
    with torch.no_grad():
        features = bf16.features(x)
        assert features.dtype == torch.float32
        assert torch.equal(features, features.bfloat16().float())  # bf16 values
        assert not torch.equal(fp32.features(x), fp32.features(x).bfloat16().float())
        _, minibatch_logprob, _, _ = bf16.get_action_and_value(x, actions)
        rollout_logprob = torch.cat([bf16.get_action_and_value(x[i:i + 8], actions[i:i + 8])[1]
                                     for i in range(0, 64, 8)])
        ratio = (minibatch_logprob - rollout_logprob).exp()
        assert (ratio - 1).abs().max() < 1e-4
        _, fp32_logprob, _, fp32_value = fp32.get_action_and_value(x, actions)
        _, _, _, bf16_value = bf16.get_action_and_value(x, actions)
        assert (minibatch_logprob - fp32_logprob).abs().max() < 1e-2
        assert (minibatch_logprob - fp32_logprob).abs().max() > 0  # it does compute in bf16
        assert (bf16_value - fp32_value).abs().max() < 1e-2
    # Gradients reach the float32 weights (autocast keeps the master weights and Adam in float32).
    bf16.get_value(x).sum().backward()
    assert bf16.trunk[0].weight.grad.dtype == torch.float32 and bf16.trunk[0].weight.grad.abs().sum() > 0


@pytest.mark.parametrize("precision, avx512_bf16, amx, expected", [
    ("fp32", True, True, False), ("bf16", False, False, True),
    ("auto", True, False, True), ("auto", False, True, True), ("auto", False, False, False),
])
def test_precision_auto_picks_bf16_only_where_the_cpu_has_it(precision, avx512_bf16, amx, expected, monkeypatch):
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: avx512_bf16)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx)
    assert ppo.use_bf16(ppo.Args(precision=precision), torch.device("cpu")) is expected


def test_precision_auto_keeps_float32_on_a_gpu(monkeypatch):
    # On CUDA, bf16 measured no faster than fp32 and starts the ratio 1e-3 from 1 (benchmarks/README.md): auto
    # takes fp32 there even on a GPU with native bf16; asking for bf16 still gets it.
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: True)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: True)
    assert ppo.use_bf16(ppo.Args(precision="auto"), torch.device("cuda")) is False
    assert ppo.use_bf16(ppo.Args(precision="bf16"), torch.device("cuda")) is True


def test_train_resume_play(tmp_path, capsys, monkeypatch):
    result = run_script(SCRIPT, *TINY, "--anneal-clip", "--eval-every", "2", "--eval-episodes", "1",
                        "--capture-video", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (run_dir,) = run_dirs(tmp_path)
    checkpoint = run_dir / "checkpoint.pt"
    ckpt = torch.load(checkpoint, weights_only=True)
    assert ckpt["global_step"] == 512 and ckpt["iteration"] == 2
    logged = scalars(run_dir)
    assert (CLEANRL_TAGS - {"charts/episodic_return", "charts/episodic_length"}) | {"eval/mean_return",
                                                                                   "charts/clip_coef"} <= set(logged)
    assert all(0 <= v <= 1 for _, v in logged["losses/vf_clipfrac"])  # the value clip's share, as clipfrac
    # --anneal-clip, Table 5: epsilon annealed with the learning rate, 0.1 x (1 - (i - 1) / 2) for updates i = 1, 2
    # (the resumed run below keeps the checkpoint's --anneal-clip without being given it).
    assert [round(v, 6) for _, v in logged["charts/clip_coef"]] == [0.1, 0.05]
    videos = list((run_dir / "videos" / "eval-512").glob("*.mp4"))
    assert len(videos) == 1 and videos[0].stat().st_size > 0

    # (the resumed part in float32: --precision changes the arithmetic, not what the checkpoint holds)
    result = run_script(SCRIPT, "--resume", str(checkpoint), "--total-timesteps", "768", "--eval-every", "0",
                        "--precision", "fp32", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert run_dirs(tmp_path) == [run_dir]
    assert torch.load(checkpoint, weights_only=True)["global_step"] == 768
    # A longer run than the checkpoint's: the annealing goes on from the last update's value, never up.
    logged = scalars(run_dir)
    assert [round(v, 6) for _, v in logged["charts/clip_coef"]] == [0.1, 0.05, 0.05]
    assert [round(v, 9) for _, v in logged["charts/learning_rate"]] == [2.5e-4, 1.25e-4, 1.25e-4]
    # The annealed schedule is the run's own: a larger clip range (or learning rate) would raise it.
    monkeypatch.chdir(tmp_path)
    expect_usage_error(ppo, capsys, monkeypatch, ["--resume", str(checkpoint), "--total-timesteps", "1024",
                                                  "--clip-coef", "0.2"],
                       f"--clip-coef cannot change on --resume (0.1 in {checkpoint}, 0.2 now)")

    result = run_script(SCRIPT, "--play", str(checkpoint), "--episodes", "1", "--capture-video", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "episode 1/1: return" in result.stdout and "mean return over 1 episodes:" in result.stdout
    videos = list((run_dir / "videos").glob("play-*/*.mp4"))
    assert len(videos) == 1 and videos[0].stat().st_size > 0


def test_video_frames_held_stay_bounded_on_a_long_episode(tmp_path, monkeypatch):
    """RecordVideo holds an episode's frames until it writes them: one frame per agent step (above the frame
    skip), and at most VIDEO_STEPS of them, however long the episode."""
    import gymnasium as gym

    monkeypatch.setattr(ppo, "VIDEO_STEPS", 20)
    env = ppo.make_env(ppo.Args(), str(tmp_path / "videos"), video_trigger=lambda episode: True)
    recorder = env
    while not isinstance(recorder, gym.wrappers.RecordVideo):
        recorder = recorder.env
    env.reset(seed=0)
    rng, held = np.random.default_rng(0), []
    for _ in range(60):  # 60 agent steps = 240 frames, all in one episode
        _, _, terminated, truncated, info = env.step(int(rng.integers(env.action_space.n)))
        held.append(len(recorder.recorded_frames))
        assert not truncated and "episode" not in info
        if terminated:  # (Breakout: a lost life; the game goes on)
            env.reset()
    env.close()
    assert [b - a for a, b in zip(held[:5], held[1:5])] == [1, 1, 1, 1]  # one frame per agent step
    assert max(held) <= 21 and len(list((tmp_path / "videos").glob("*.mp4"))) >= 1


def test_two_torchrun_ranks_end_an_update_with_identical_parameters(tmp_path):
    argv = [*TINY, "--total-timesteps", "512", "--eval-every", "0"]  # 2 ranks x 256 samples: one update
    rank0, rank1 = two_torchrun_ranks("ppo_breakout_atari", argv, tmp_path)
    # Each rank drew its own weights (its own seed), then took rank 0's, and the averaged gradients kept
    # them equal through the update, which moved them.
    assert any(not torch.equal(rank0["initial"][k], rank1["initial"][k]) for k in rank0["initial"])
    for name in rank0["final"]:
        assert torch.equal(rank0["final"][name], rank1["final"][name]), name
    assert any(not torch.equal(rank0["final"][k], rank0["initial"][k]) for k in rank0["final"])
    # Only rank 0 logs and saves: one run folder, and it counts both ranks' steps.
    (run_dir,) = run_dirs(tmp_path)
    assert torch.load(run_dir / "checkpoint.pt", weights_only=True)["global_step"] == 512


def test_ctrl_c_saves_a_checkpoint_and_exits(tmp_path):
    ctrl_c_saves_a_checkpoint(SCRIPT, "--num-envs", "2", "--num-steps", "64", "--minibatch-size", "64",
                              "--no-cuda", "--checkpoint-every", "0", "--eval-every", "0", cwd=tmp_path,
                              steps_per_update=2 * 64, total_timesteps=2_500_000, message=STOP_MESSAGE)


def test_ctrl_c_under_torchrun_saves_every_ranks_state_in_time(tmp_path):
    # torchrun kills its workers 30 s after forwarding Ctrl-C: they stop at the next step they agree on and
    # rank 0 saves the last complete update, with both ranks' random generators.
    ckpt = ctrl_c_saves_a_checkpoint(SCRIPT, "--num-envs", "2", "--num-steps", "64", "--minibatch-size", "64",
                                     "--no-cuda", "--checkpoint-every", "0", "--eval-every", "0",
                                     "--vectorization-mode", "sync", cwd=tmp_path, steps_per_update=2 * 2 * 64,
                                     total_timesteps=2_500_000, message=STOP_MESSAGE, ranks=2)
    assert len(ckpt["rng"]) == 2 and not torch.equal(ckpt["rng"][0]["torch"], ckpt["rng"][1]["torch"])


def test_torchrun_resume_gives_each_rank_its_own_random_state(tmp_path):
    argv = [*TINY, "--eval-every", "0"]
    bars = []
    two_torchrun_ranks(ppo.__name__, argv, tmp_path, stderr=bars)
    total = int(argv[argv.index("--total-timesteps") + 1])
    assert f"{total}/{total} [" in bars[0]  # the progress bar counts the steps of both ranks
    (run_dir,) = run_dirs(tmp_path)
    saved = torch.load(run_dir / "checkpoint.pt", weights_only=True)["rng"]
    assert len(saved) == 2 and not torch.equal(saved[0]["torch"], saved[1]["torch"])
    rank0, rank1 = two_torchrun_ranks(ppo.__name__, ["--resume", str(run_dir / "checkpoint.pt"),
                                                     "--total-timesteps", str(2 * total)], tmp_path)
    assert torch.equal(rank0["restored"][0], saved[0]["torch"]) and torch.equal(rank1["restored"][0], saved[1]["torch"])


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--env-id", "NoSuchEnv-v0"], "cannot make --env-id 'NoSuchEnv-v0'"),
        (["--env-id", "CartPole-v1"], "CartPole-v1 is not an Atari game; this script needs one of the ALE"),
        (["--env-id", "ALE/Breakout-v5"], "skips frames itself; this script skips them with MaxAndSkip"),
        (["--num-envs", "0"], "--num-envs must be positive"),
        (["--num-envs", "2", "--num-steps", "16", "--minibatch-size", "64"], "larger than the rollout"),
        (["--total-timesteps", "1000"], "less than one rollout of every rank"),
        (["--clip-coef", "0"], "--clip-coef must be positive"),
        (["--minibatch-size", "1"], "--minibatch-size must be at least 2 with --norm-adv"),
        (["--resume", "missing.pt"], "no checkpoint at missing.pt"),
    ],
)
def test_bad_arguments(argv, fragment, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    expect_usage_error(ppo, capsys, monkeypatch, argv, fragment)
    assert not (tmp_path / "runs").exists(), "a refused run must not leave a run folder behind"


def test_bad_checkpoints(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    expect_unreadable_checkpoints_refused(ppo, capsys, monkeypatch, tmp_path)
    args = ppo.Args()
    agent = ppo.Agent(ppo.make_env(args), args.hidden_size)
    real = tmp_path / "real.pt"
    ppo.save_checkpoint(str(real), ppo.checkpoint_state(args, agent, torch.optim.Adam(agent.parameters()), 0, 0,
                                                        SCHEDULE))
    expect_usage_error(ppo, capsys, monkeypatch, ["--play", str(real), "--env-id", "PongNoFrameskip-v4"],
                       "holds a policy for BreakoutNoFrameskip-v4, not for --env-id PongNoFrameskip-v4")
    expect_usage_error(ppo, capsys, monkeypatch, ["--play", str(real), "--hidden-size", "256"], "does not fit")
