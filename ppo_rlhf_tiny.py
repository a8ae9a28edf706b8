"""PPO on language: a tiny transformer fine-tuned by RLHF, the recipe of OpenAI's lm-human-preferences, on a CPU.

What this lesson teaches
    Text as an MDP: the state s_t is the prompt and the tokens written so far, the action a_t the next token, and
    an episode one response, over when the policy writes "." (or after T tokens). A reward model, trained on a
    "human's" preferences between pairs of reviews, scores the whole response at its last token; every token pays
    beta (log pi(a_t|s_t) - log pi_ref(a_t|s_t)), the KL to the pretrained model pi_ref, which holds pi near the
    text the reward model was trained on. Then it is the PPO of ppo_cartpole.py: GAE (gamma 1) over the response's
    tokens, the clipped surrogate and a clipped value loss, K epochs of minibatches; beta set by the adaptive KL
    controller. Everything is made in the run: the language, the pretrained model, the preferences, the reward model.

The loop (each line names the function below that does it)
    pretrain pi_ref on reviews of a small grammar (next-token prediction); pi, V start from it    pretrain()
    train the reward model R on pairs a hidden rule prefers one of; normalize it on pi_ref's text  train_reward_model()
    for each update i = 1, 2, ..., num_iterations:                                 train()
        N prompts "the <noun>"; pi writes a response of at most T tokens to each    collect_rollout()
        log pi_old(a_t|s_t), log pi_ref(a_t|s_t), V(s_t) per token; R(prompt + response)
        r_t = -beta (log pi_old - log pi_ref), plus R's score on the last token   per_token_rewards()
        advantages A_t by GAE down each response (gamma 1); V^targ_t = A_t + V(s_t)   compute_gae()
        for K epochs, for each shuffled minibatch of M responses, over their tokens:
            r_t = pi(a_t|s_t) / pi_old(a_t|s_t); -L^CLIP from r_t and A_t          clipped_surrogate_loss()
            L^VF, V held near its old value                                        clipped_value_loss()
            loss = -L^CLIP + c1 L^VF; one Adam step, gradient clipped               train()
        beta *= 1 + e n / horizon, e = clip(KL / KL_target - 1, -0.2, 0.2)        AdaptiveKLController.update()

What you should see
    Three phases, each with its line: pi_ref pretrained (about 15 s on 2 CPU cores), the reward model's held-out
    accuracy (0.92 to 0.99 on seeds 1-5), then PPO's progress bar (about 35 s), whose return is R - beta KL. Over
    the 240 updates the hidden score of the sampled responses (the "human's" rule, which PPO never sees) rises from
    pi_ref's 0 to about 3.8 of a possible 4, nearly every response "the <noun> was (or is) very great ."; the KL
    to pi_ref climbs to the controller's target of 3 nats and ends between 2.7 and 3.0, every response still
    grammatical.
    Curves of 5 seeds: benchmarks/results/language.png; the record: benchmarks/README.md, "PPO on language"; a run
    that looks otherwise: python -m course.diagnose runs/<run>.

Try this (predict, then run; "Measured": the change in the final hidden score, 256 sampled responses a run, paired
over seeds 1-5 against the default, 95% interval, Holm-corrected verdict; benchmarks/README.md, "PPO on language")
    python ppo_rlhf_tiny.py --kl-coef 0 --no-adaptive-kl
        Predict: no KL penalty at all: does the hidden score rise further, or fall?
        Answer: it depends on the seed: on 2 of 5 the policy leaves the language, writing text the reward model
            was never shown and scores well (seed 2: "the food .", no review at all, which R scores far above
            pi_ref's reviews) while the grammar rejects it: reward hacking, the valid share at 0 and the hidden score at its
            lowest mark, -5; on the other 3 it finds the rule's best review. With the penalty all 5 kept the
            language, scoring 3.6 to 4.0.
        Measured: -3.44 [-9.63, 2.75], not detected (2 of 5 seeds hacked: valid share 0)
    python grpo_rlhf_tiny.py
        Predict: no critic; each prompt answered G times, A = (R - mean) / std of its group. Better or worse?
        Answer: nearly as good on 4 of 5 seeds (3.5 to 3.9, PPO's 3.6 to 4.0); on seed 2 it drifts off the
            language (valid share 0.43): its beta is fixed, and nothing steers its KL (3.5 to 15 nats) back to a
            target as PPO's controller does.
        Measured: -1.10 [-3.82, 1.62], not detected

Differs from ppo_cartpole.py in:
    - the environment is text: a grammar of reviews (`make_env`), a response an episode, a token an action
    - the agent is a causal transformer with a policy head and a value head on one trunk, pretrained first
    - the reward is learned: `train_reward_model` from preferences; `per_token_rewards` adds the KL to pi_ref
    - N responses a rollout, minibatches of whole responses, rewards and advantages whitened, the value clipped
    - beta adapted by `AdaptiveKLController` (ppo_pendulum_continuous.py's --objective kl adapts the paper's)

Usage
    python ppo_rlhf_tiny.py                                                  # pretrain, reward model, PPO
    python ppo_rlhf_tiny.py --play runs/<run>/checkpoint.pt --episodes 10    # read the policy's responses
    tensorboard --logdir runs                                                # the curves

References
    [PPO] Schulman et al. 2017, Proximal Policy Optimization Algorithms, arXiv:1707.06347 (eqs. 7, 9, 11, 12)
    [GAE] Schulman et al. 2016, High-Dimensional Continuous Control Using GAE, arXiv:1506.02438
    [LHP] Ziegler et al. 2019, Fine-Tuning Language Models from Human Preferences, arXiv:1909.08593 (equation 2), and
          its code github.com/openai/lm-human-preferences (train_policy.py: the KL controller, the rewards, the loss)
    [NID] Huang et al. 2024, The N Implementation Details of RLHF with PPO, arXiv:2403.17031
    [BT]  Bradley and Terry 1952, the pairwise preference model that the reward model's loss is
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

# "# Copied from common.<module>.<Name>": a copy of common/<module>.py's <Name>, checked by tools.check_copies.


@dataclass
class Hyperparameters:
    """PPO's hyperparameters, each a flag (--learning-rate 1e-3); Args, below the fence, adds the run's flags."""

    # --- environment: the language, the "human", and the models made before PPO ---
    env_id: str = "TinyReviews-v0"
    """the task: reviews of a small grammar, scored by a hidden rule (the only one this script knows)"""
    total_timesteps: int = 184_320
    """token steps to train PPO for, each response counted at its full --num-steps (lm-human-preferences counts
    them so): num_iterations = total_timesteps / (num_envs x num_steps)"""
    pretrain_steps: int = 1500
    """Adam steps of next-token prediction on the grammar's reviews, before anything else: this makes pi_ref"""
    reward_pairs: int = 8192
    """pairs of reviews the hidden rule labels (which of the two it prefers) to train the reward model on"""
    reward_epochs: int = 4
    """passes of the reward model over its pairs"""
    temperature: float = 0.7
    """pi samples from softmax(logits / temperature), and the update's log pi uses the same (lm-human-preferences:
    0.7)"""

    # --- PPO hyperparameters (same order in every script) ---
    learning_rate: float = 3e-4
    """the Adam step size at the start of PPO (lm-human-preferences: 5e-6 for GPT-2; 3e-4 here, not tuned)"""
    anneal_lr: bool = True
    """anneal the learning rate linearly to 0 over PPO's updates, as lm-human-preferences does"""
    num_envs: int = 64
    """N, responses per rollout, each to its own prompt (lm-human-preferences' batch_size: 64)"""
    num_steps: int = 12
    """T, the most tokens a response may have; one without "." by then gets --no-end-penalty instead of a score"""
    gamma: float = 1.0  # as lm-human-preferences: a response is a few tokens long, and only its end is scored
    """gamma, the discount of future rewards: the agent looks about 1/(1-gamma) steps ahead (usual 0.9-0.999)"""
    gae_lambda: float = 0.95  # lm-human-preferences' 0.95, over a response's tokens
    """lambda of GAE: 0 gives the one-step TD advantage (low variance, biased by V), 1 the Monte-Carlo return minus V
    (unbiased, high variance); usual 0.8 to 0.98"""
    minibatch_size: int = 32
    """M, responses per gradient step: each epoch splits the N responses into N/M shuffled minibatches"""
    update_epochs: int = 4  # lm-human-preferences' 4
    """K, passes over each rollout (paper: 3 to 15); more reuse of the data, more risk of moving too far"""
    clip_coef: float = 0.2
    """epsilon, the clip range of the probability ratio (eq. 7), per token (lm-human-preferences: 0.2)"""
    vf_clip_coef: float = 0.2
    """the value clip range, in units of the whitened rewards (lm-human-preferences' cliprange_value: 0.2)"""
    ent_coef: float = 0.0  # 0, as lm-human-preferences: the KL to pi_ref already keeps pi spread out
    """c2, weight of the entropy bonus S (eq. 9): rewards keeping pi spread out, so it keeps exploring (usual 0-0.01)"""
    vf_coef: float = 0.1
    """c1, weight of the value loss in the sum (lm-human-preferences: 0.1)"""
    max_grad_norm: float = 1.0
    """clip the global norm of the gradient to this (lm-human-preferences clips none; 1.0 is Hugging Face's default)"""

    # --- the KL penalty to the reference ---
    kl_coef: float = 0.15
    """beta, the KL penalty's weight at the start (lm-human-preferences' sentiment task starts at 0.15)"""
    adaptive_kl: bool = True
    """adapt beta so that the KL to pi_ref nears --kl-target (--no-adaptive-kl: beta stays --kl-coef)"""
    kl_target: float = 3.0
    """KL_target: the KL(pi || pi_ref) of a whole response, in nats, that the controller steers to"""
    kl_horizon: int = 1000
    """how many responses the controller takes to correct beta: at most 20% a horizon (lm-human-preferences:
    10,000 responses over 2M; this run samples about 1% of that)"""
    no_end_penalty: float = -1.0
    """the score a response gets that has no "." within --num-steps tokens (lm-human-preferences: -1)"""

    # --- the network ---
    d_model: int = 64
    """the transformer's width: each token's vector has this many numbers"""
    n_layers: int = 2
    """transformer blocks (attention, then a per-token MLP)"""
    n_heads: int = 4
    """attention heads in each block (d_model must be a multiple of it)"""


# --- The environment: a language of short reviews, and the "human" who prefers some --------------------------
# In RLHF the environment is the text itself: the state is what has been written, an action appends one token,
# and the episode ends at the end token. Its reward is not in the environment: a human judges the finished text.
# Here the "human" is a hidden rule, so that a run can measure what a reward model learned and what PPO did with it.

VOCAB = ["<pad>", "<bos>", ".", "the", "food", "service", "movie", "room", "staff", "was", "is", "not", "very",
         "good", "great", "fine", "bad", "awful", "dull", "but"]
PAD, BOS, END = 0, 1, 2
NOUNS, VERBS = ["food", "service", "movie", "room", "staff"], ["was", "is"]
# The hidden rule's worth of each adjective; "very" doubles it, "not" flips it, and after "but" only the second
# clause counts. Text the grammar does not accept gets less than any review: INVALID.
WORTH = {"great": 2.0, "good": 1.0, "fine": 0.5, "dull": -0.5, "bad": -1.0, "awful": -2.0}
INVALID = -5.0


class ReviewTask:
    """The token MDP's environment: prompts, the grammar, and the hidden score. Reviews read
        the <noun> <verb> [not] [very] <adjective> [but the <noun> <verb> [not] [very] <adjective>] .
    A prompt is "<bos> the <noun>"; the policy writes the rest, up to and including "."."""

    def __init__(self):
        self.rng = np.random  # NumPy's global generator: seeded by --seed, saved in checkpoints with the others
        self.ids = {word: i for i, word in enumerate(VOCAB)}
        self.context = 3 + 12  # the prompt and the longest review's rest; --num-steps may not exceed 12

    def clause(self) -> list[str]:
        words = ["the", self.rng.choice(NOUNS), self.rng.choice(VERBS)]
        words += ["not"] * (self.rng.random() < 0.25) + ["very"] * (self.rng.random() < 0.3)
        return words + [self.rng.choice(list(WORTH))]

    def review(self) -> list[int]:
        """A review the grammar accepts, as the corpus holds them: one clause, or two joined by "but"."""
        words = self.clause() + (["but"] + self.clause() if self.rng.random() < 0.35 else []) + ["."]
        return [BOS] + [self.ids[w] for w in words]

    def prompts(self, n: int) -> torch.Tensor:
        """n prompts "<bos> the <noun>", [n, 3]."""
        return torch.tensor([[BOS, self.ids["the"], self.ids[self.rng.choice(NOUNS)]] for _ in range(n)])

    def hidden_score(self, tokens) -> float:
        """The "human's" score of a whole text (prompt and response, "<bos>" first): INVALID unless the grammar
        accepts it; else its last clause's adjective's worth, doubled by "very", negated by "not"."""
        words = [VOCAB[t] for t in tokens if t != PAD][1:]
        if not words or words[-1] != "." or words.count(".") != 1:
            return INVALID
        clauses = " ".join(words[:-1]).split(" but ")
        if len(clauses) > 2:
            return INVALID
        score = INVALID
        for clause in clauses:
            w = clause.split()
            if len(w) < 4 or w[0] != "the" or w[1] not in NOUNS or w[2] not in VERBS or w[-1] not in WORTH:
                return INVALID
            middle = w[3:-1]
            if middle not in ([], ["not"], ["very"], ["not", "very"]):
                return INVALID
            score = WORTH[w[-1]] * (2.0 if "very" in middle else 1.0) * (-1.0 if "not" in middle else 1.0)
        return score

    def decode(self, tokens) -> str:
        return " ".join(VOCAB[t] for t in tokens if t not in (PAD, BOS))


def make_env(args: Args) -> ReviewTask:
    """The task; the reviews and prompts are drawn from NumPy's generator (seeded by --seed)."""
    return checked_task(args)  # refusing a task id this script does not know


# --- The agent: a tiny transformer, its policy head and its value head -----------------------------------------


# Copied from common.ppo.layer_init
def layer_init(layer: nn.Module, std: float = np.sqrt(2), bias_const: float = 0.0) -> nn.Module:
    """Orthogonal weights with gain `std`, zero biases ([37] detail 2): an orthogonal matrix keeps its input's
    length (times the gain), so no layer starts out shrinking or blowing up the signal."""
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Block(nn.Module):
    """One transformer block: each token's vector takes in the earlier tokens' (causal self-attention), then goes
    through an MLP of its own; each step adds to the vector (a residual) after a LayerNorm."""

    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.n_heads = n_heads
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.qkv, self.proj = nn.Linear(d_model, 3 * d_model), nn.Linear(d_model, d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, L, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, L, 3, self.n_heads, D // self.n_heads).permute(2, 0, 3, 1, 4)
        # is_causal: position t attends to positions 0..t only, so V(s_t) and pi(.|s_t) never see the future
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attended.transpose(1, 2).reshape(B, L, D))
        return x + self.mlp(self.ln2(x))


class Transformer(nn.Module):
    """A GPT in miniature: token and position embeddings, causal blocks, a last LayerNorm. [B, L] -> [B, L, d]."""

    def __init__(self, args: Hyperparameters, context: int):
        super().__init__()
        self.tokens, self.positions = nn.Embedding(len(VOCAB), args.d_model), nn.Embedding(context, args.d_model)
        self.blocks = nn.Sequential(*[Block(args.d_model, args.n_heads) for _ in range(args.n_layers)])
        self.ln = nn.LayerNorm(args.d_model)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        return self.ln(self.blocks(self.tokens(tokens) + self.positions(positions)))


class Agent(nn.Module):
    """The policy pi(a|s), a language model: the next token's probabilities after each prefix; and V(s), on the same
    trunk, as ppo_cartpole.py's agent. The value head starts at zero ([NID]), so that V knows nothing yet rather
    than something wrong, and the first updates' advantages are the rewards themselves."""

    def __init__(self, args: Hyperparameters, context: int):
        super().__init__()
        self.temperature = args.temperature
        self.trunk = Transformer(args, context)
        # the language model's head, a logit per token; std 0.01: pretraining starts from near-uniform guesses
        self.actor = layer_init(nn.Linear(args.d_model, len(VOCAB)), std=0.01)
        # V's head: zeros, made without a random draw (skip_init), so a seed makes grpo_rlhf_tiny.py's very pi_ref
        self.critic = nn.utils.skip_init(nn.Linear, args.d_model, 1)
        nn.init.zeros_(self.critic.weight), nn.init.zeros_(self.critic.bias)

    def get_value(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.critic(self.trunk(tokens)).squeeze(-1)

    def get_action_and_value(self, tokens: torch.Tensor, action: Optional[torch.Tensor] = None, greedy: bool = False):
        """For every prefix tokens[:, :t+1] at once (the trunk is causal): the next token a_t (`action[:, t]` if
        given, else sampled from pi(.|s_t), or the most probable if greedy), log pi(a_t|s_t), the entropy
        H(pi(.|s_t)) and V(s_t). Each [B, L]."""
        hidden = self.trunk(tokens)
        log_pi = (self.actor(hidden) / self.temperature).log_softmax(-1)  # log pi(a|s_t) for every token a
        if action is None:
            action = log_pi.argmax(-1) if greedy else torch.distributions.Categorical(logits=log_pi).sample()
        log_prob = log_pi.gather(-1, action.unsqueeze(-1)).squeeze(-1)
        entropy = -(log_pi.exp() * log_pi).sum(-1)
        return action, log_prob, entropy, self.critic(hidden).squeeze(-1)


def generate(agent: Agent, prompts: torch.Tensor, num_steps: int, greedy: bool = False) -> torch.Tensor:
    """pi writes a response to each prompt, one token at a time, each from the text so far; after "." it writes
    only "<pad>" (the episode is over). Returns the responses, [B, T]."""
    sequences, done = prompts, torch.zeros(len(prompts), dtype=torch.bool, device=prompts.device)
    for _ in range(num_steps):
        action, _, _, _ = agent.get_action_and_value(sequences, greedy=greedy)
        token = torch.where(done, PAD, action[:, -1])  # the token after the last prefix
        sequences = torch.cat([sequences, token[:, None]], dim=1)
        done |= token == END
    return sequences[:, prompts.shape[1]:]


# --- Before PPO: pretraining pi_ref, and learning a reward model from preferences -------------------------------


def pretrain(task: ReviewTask, args: Hyperparameters, device: torch.device) -> Agent:
    """The pretrained model, pi_ref: next-token prediction (cross-entropy) on batches of the grammar's reviews,
    each padded to the context. RLHF starts from such a model, never from random weights: it writes the language
    already, and PPO only shifts which of its texts it prefers."""
    agent = Agent(args, task.context).to(device)
    optimizer = adam(agent.parameters(), lr=3e-3, eps=1e-8)
    for step in range(args.pretrain_steps):
        batch = torch.full((64, task.context), PAD)
        for row in batch:
            review = task.review()
            row[:len(review)] = torch.tensor(review)
        batch = batch.to(device)
        logits = agent.actor(agent.trunk(batch[:, :-1]))
        # -log p(token | the tokens before it), averaged over the real tokens (the padding after "." is no text)
        loss = F.cross_entropy(logits.reshape(-1, len(VOCAB)), batch[:, 1:].reshape(-1), ignore_index=PAD)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return agent


class RewardModel(nn.Module):
    """R(x, y): one number for a whole text, read at its last token (the trunk is causal: the last token has seen
    all of it). Its trunk starts as pi_ref's ([LHP]): it reads the language already, and learns only to judge."""

    def __init__(self, reference: Agent):
        super().__init__()
        self.trunk = copy.deepcopy(reference.trunk)
        self.head = nn.Linear(reference.actor.in_features, 1)
        self.register_buffer("gain", torch.ones(()))
        self.register_buffer("bias", torch.zeros(()))

    def forward(self, tokens: torch.Tensor, last: torch.Tensor) -> torch.Tensor:
        """The score of each text, [B], read at index last[b] (its end token); normalized by gain and bias."""
        scores = self.head(self.trunk(tokens)).squeeze(-1)
        return self.gain * scores.gather(1, last[:, None]).squeeze(1) + self.bias


def reward_model_loss(score_preferred: torch.Tensor, score_other: torch.Tensor) -> torch.Tensor:
    """The Bradley-Terry model [BT]: the human prefers y_w to y_l with probability sigmoid(R(y_w) - R(y_l)); the
    loss is that probability's negative log-likelihood, -log sigmoid(R(y_w) - R(y_l)), averaged over the pairs."""
    return -F.logsigmoid(score_preferred - score_other).mean()


def train_reward_model(task: ReviewTask, reference: Agent, args: Hyperparameters, device: torch.device):
    """R from preferences: pairs of the grammar's reviews, the one the hidden rule scores higher preferred (ties
    dropped), 1/8 of the pairs held out. Then normalized, as [LHP] does, so that on pi_ref's own responses its
    scores have mean 0 and standard deviation 1. Returns R and its held-out accuracy."""
    pairs = []
    while len(pairs) < args.reward_pairs:
        a, b = task.review(), task.review()
        if task.hidden_score(a) != task.hidden_score(b):
            pairs.append((a, b) if task.hidden_score(a) > task.hidden_score(b) else (b, a))
    (preferred, preferred_last), (other, other_last) = (
        (x.to(device) for x in pad_texts([pair[i] for pair in pairs], task.context)) for i in (0, 1))
    held_out = len(pairs) // 8
    model = RewardModel(reference).to(device)
    optimizer = adam(model.parameters(), lr=1e-3, eps=1e-8)
    for epoch in range(args.reward_epochs):
        for mb in (torch.randperm(len(pairs) - held_out, device=device) + held_out).split(64):
            loss = reward_model_loss(model(preferred[mb], preferred_last[mb]), model(other[mb], other_last[mb]))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    with torch.no_grad():
        held = slice(0, held_out)
        right = model(preferred[held], preferred_last[held]) > model(other[held], other_last[held])
        accuracy = right.float().mean().item()
        prompts = task.prompts(256).to(device)
        sequences = torch.cat([prompts, generate(reference, prompts, args.num_steps)], 1)
        scores = model(sequences, last_token(sequences))
        model.gain.fill_(1.0 / scores.std().item())
        model.bias.fill_(-scores.mean().item() / scores.std().item())
    return model, accuracy


def pad_texts(texts: list[list[int]], context: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Texts as one [B, context] tensor, padded after their end, and the index of each one's last token."""
    tokens = torch.full((len(texts), context), PAD)
    for row, text in zip(tokens, texts):
        row[:len(text)] = torch.tensor(text)
    return tokens, last_token(tokens)


def last_token(tokens: torch.Tensor) -> torch.Tensor:
    """The index of each row's last token that is not "<pad>"."""
    return (tokens != PAD).sum(1) - 1


# --- PPO on tokens: the rollout, the per-token rewards, GAE and the losses --------------------------------------


@dataclass
class Rollout:
    """A rollout of N responses, each row one episode: [N, P] prompts, [N, T] everything else."""

    prompts: torch.Tensor
    responses: torch.Tensor
    mask: torch.Tensor  # 1 on the response's tokens, up to and including "."; 0 on the padding after it
    logprobs: torch.Tensor  # log pi_old(a_t|s_t)
    ref_logprobs: torch.Tensor  # log pi_ref(a_t|s_t)
    values: torch.Tensor  # V(s_t)
    scores: torch.Tensor  # R(prompt + response), [N]: the reward model's, or --no-end-penalty


def response_mask(responses: torch.Tensor) -> torch.Tensor:
    """1 on each response's tokens up to and including its first "." (all T where it has none), 0 after it."""
    ended_before = torch.cumsum(responses == END, dim=1) - (responses == END).long()
    return (ended_before == 0).float()


def collect_rollout(task: ReviewTask, agent: Agent, reference: Agent, reward_model: RewardModel,
                    args: Hyperparameters) -> Rollout:
    """pi_old answers N prompts; the per-token quantities are read in one pass over each whole text (the trunk is
    causal: position t sees the prompt and a_0..a_{t-1}, which is s_t)."""
    device = next(agent.parameters()).device
    with torch.inference_mode():
        prompts = task.prompts(args.num_envs).to(device)
        responses = generate(agent, prompts, args.num_steps)
        text = torch.cat([prompts, responses], dim=1)
        start = prompts.shape[1] - 1  # the prefix that predicts the response's first token
        _, logprobs, _, values = (x[:, start:] for x in agent.get_action_and_value(text[:, :-1], text[:, 1:]))
        _, ref_logprobs, _, _ = (x[:, start:] for x in reference.get_action_and_value(text[:, :-1], text[:, 1:]))
        mask = response_mask(responses)
        ended = (responses == END).any(1)
        scores = torch.where(ended, reward_model(text, last_token(text)), args.no_end_penalty)
    return Rollout(prompts, responses, mask, logprobs * mask, ref_logprobs * mask, values * mask, scores)


def per_token_rewards(scores: torch.Tensor, logprobs: torch.Tensor, ref_logprobs: torch.Tensor, mask: torch.Tensor,
                      beta: float) -> torch.Tensor:
    """r_t = -beta (log pi_old(a_t|s_t) - log pi_ref(a_t|s_t)) on every response token, plus R's score on the
    last one ([LHP]'s equation 2 spread over the tokens). Summed over a response, the penalty is beta times a sample of
    KL(pi || pi_ref) = E_pi[log pi - log pi_ref]: the return is R - beta KL. [N, T]."""
    rewards = -beta * (logprobs - ref_logprobs) * mask
    rewards[torch.arange(len(scores)), mask.sum(1).long() - 1] += scores
    return rewards


def whiten(values: torch.Tensor, mask: torch.Tensor, shift_mean: bool = True) -> torch.Tensor:
    """values scaled to standard deviation 1 over the real tokens (mask 1), and shifted to mean 0 if shift_mean."""
    mean = (values * mask).sum() / mask.sum()
    var = (((values - mean) * mask) ** 2).sum() / mask.sum()
    whitened = (values - mean) * torch.rsqrt(var + 1e-8)
    return (whitened if shift_mean else whitened + mean) * mask


# Copied from common.ppo.compute_gae
def compute_gae(rewards, values, dones, final_values, last_value, gamma: float, gae_lambda: float) -> np.ndarray:
    """Generalized Advantage Estimation ([GAE]), backwards over a rollout. NumPy arrays [T] (or [T, N]).

    A k-step estimate of A_t sums k rewards, then trusts V: r_t + ... + gamma^(k-1) r_{t+k-1} + gamma^k V(s_{t+k})
    - V(s_t). Small k leans on V (little variance, but V's bias); large k on the rewards (no bias, much variance).
    GAE averages them all with weights (1 - lambda) lambda^(k-1): lambda = 0 is the one-step delta_t, lambda = 1
    the whole return minus V. The average sums to the recursion below.

    dones[t] = 1 where an episode ended at step t: no advantage flows back across it, and final_values[t] is its
    V(s_{t+1}), 0 after a termination, V(final observation) after a truncation. last_value = V(s_T).
    """
    # V(s_{t+1}) for every step: the next row's value, last_value after the last row, final_values at ends.
    next_values = np.where(dones == 1, final_values, np.concatenate([values[1:], [last_value]]))
    advantages = np.zeros_like(rewards)
    last_gae = 0.0
    for t in reversed(range(len(rewards))):
        # delta_t = r_t + gamma * V(s_{t+1}) - V(s_t)                              (paper eq. 12)
        delta = rewards[t] + gamma * next_values[t] - values[t]
        # A_t = delta_t + gamma * lambda * A_{t+1}, cut at episode ends            (paper eq. 11)
        last_gae = delta + gamma * gae_lambda * (1.0 - dones[t]) * last_gae
        advantages[t] = last_gae
    return advantages


def response_advantages(rewards: torch.Tensor, values: torch.Tensor, mask: torch.Tensor, args: Hyperparameters):
    """A_t and V^targ_t = A_t + V(s_t) for every response token, [N, T]: CartPole's compute_gae run down each
    response (time on the first axis, so the arrays go in transposed). A response is an episode that ends at its
    last token, and nothing follows: done there, V after it 0. The padding after it has reward 0 and V 0, so its
    advantages are 0 and the mask drops them."""
    dones = torch.zeros_like(mask)
    dones[torch.arange(len(mask)), mask.sum(1).long() - 1] = 1.0
    r, v, d = (x.T.cpu().numpy() for x in (rewards, values, dones))  # [T, N]
    advantages = compute_gae(r, v, d, np.zeros_like(v), np.zeros(v.shape[1], np.float32), args.gamma, args.gae_lambda)
    advantages = torch.as_tensor(advantages.T, device=mask.device) * mask
    return advantages, advantages + values


# Copied from common.ppo.clipped_surrogate_loss
def clipped_surrogate_loss(ratio: torch.Tensor, advantages: torch.Tensor, clip_coef: float) -> torch.Tensor:
    """-L^CLIP, to minimize. L^CLIP = E[min(r_t A_t, clip(r_t, 1 - eps, 1 + eps) A_t)]      (paper eq. 7)

    By cases (the paper's Figure 1). A_t > 0, an action better than average: L^CLIP grows with r_t up to 1 + eps,
    then is flat, so nothing is gained by making a_t more likely than that. A_t < 0: it grows as r_t falls to
    1 - eps, then is flat. The min keeps the unclipped term where it is smaller, so a move the wrong way is never
    clipped away. Flat means a zero gradient: the clip removes the incentive to push r_t further, not the move.
    """
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1.0 - clip_coef, 1.0 + clip_coef) * advantages
    return -torch.min(unclipped, clipped).mean()


# Copied from common.ppo.clipped_value_loss
def clipped_value_loss(newvalue, oldvalue, returns, vf_clip_coef: float) -> torch.Tensor:
    """L^VF with the value clipped like the ratio ([37] detail 9):
    0.5 * max((V - V^targ)^2, (V_old + clip(V - V_old, -eps_v, eps_v) - V^targ)^2)

    Like L^CLIP, a pessimistic bound: moving V further than eps_v from the V that collected the data earns no
    more credit. The paper uses the plain squared error; baselines and CleanRL clip (whether it helps: README.md).
    """
    clipped = oldvalue + torch.clamp(newvalue - oldvalue, -vf_clip_coef, vf_clip_coef)
    return 0.5 * torch.max((newvalue - returns) ** 2, (clipped - returns) ** 2).mean()


class AdaptiveKLController:
    """beta, adapted as [LHP] does: after each rollout, e = clip(KL / KL_target - 1, -0.2, 0.2), the KL's relative
    error capped at 20%, and beta *= 1 + e n / horizon for the n responses it was measured on. Too far from pi_ref,
    beta grows and the penalty pulls pi back; too close, beta shrinks and R counts for more. Proportional and
    gentle, where ppo_pendulum_continuous.py's (the paper's section 4) doubles or halves beta."""

    def __init__(self, beta: float, target: float, horizon: int, adaptive: bool):
        self.beta, self.target, self.horizon, self.adaptive = beta, target, horizon, adaptive

    def update(self, kl: float, n: int) -> None:
        if self.adaptive:
            error = float(np.clip(kl / self.target - 1.0, -0.2, 0.2))
            self.beta *= 1.0 + error * n / self.horizon


# --- Training: the PPO loop ----------------------------------------------------------------------------------


def train(args: Args, ckpt: Optional[dict]) -> None:
    args.batch_size = args.num_envs * args.num_steps
    args.num_iterations = args.total_timesteps // args.batch_size
    run = Run(args, ckpt)  # seeds, run folder, log, checkpoints, Ctrl-C: the plumbing, below the fence
    device = run.device

    task = make_env(args)
    # pi_ref and R, made before PPO (a resumed run reads them from its checkpoint: run.prepare)
    reference, reward_model = run.prepare(lambda: pretrain(task, args, device),
                                          lambda ref: train_reward_model(task, ref, args, device))
    agent = copy.deepcopy(reference).requires_grad_(True)  # pi and V start as pi_ref, V's head at zero
    optimizer = adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)
    kl_ctl = AdaptiveKLController(args.kl_coef, args.kl_target, args.kl_horizon, args.adaptive_kl)
    global_step, start_iteration, log = run.start(agent, optimizer, kl_ctl)  # 0 and 1 in a new run

    for iteration in range(start_iteration, args.num_iterations + 1):
        if args.anneal_lr:  # lr_i = alpha_i * learning_rate, falling linearly toward 0 (as in ppo_cartpole.py)
            optimizer.param_groups[0]["lr"] = run.alpha(iteration) * args.learning_rate

        # --- Rollout: pi_old answers N prompts; R scores each whole response -------------------------------
        rollout = collect_rollout(task, agent, reference, reward_model, args)
        mask = rollout.mask
        rewards = per_token_rewards(rollout.scores, rollout.logprobs, rollout.ref_logprobs, mask, kl_ctl.beta)
        global_step += args.batch_size

        # --- Advantages: GAE down each response. The rewards are first scaled to std 1 (not shifted: a shift
        # would reward length), so V learns on one scale whatever R's and beta are ([LHP] whiten_rewards).
        advantages, returns = response_advantages(whiten(rewards, mask, shift_mean=False), rollout.values, mask, args)
        advantages = whiten(advantages, mask)  # mean 0, std 1 over the rollout's tokens ([LHP]; CartPole's norm_adv)

        # --- Update: K epochs over minibatches of whole responses, every token of them a sample ------------
        text = torch.cat([rollout.prompts, rollout.responses], dim=1)
        start = rollout.prompts.shape[1] - 1
        clipfracs = []
        for epoch in range(args.update_epochs):
            for mb in torch.randperm(args.num_envs, device=device).split(args.minibatch_size):
                _, newlogprob, entropy, newvalue = (
                    x[:, start:] for x in agent.get_action_and_value(text[mb, :-1], text[mb, 1:]))
                real = mask[mb] == 1  # the response's tokens: the padding after "." is no action
                logratio = newlogprob[real] - rollout.logprobs[mb][real]
                ratio = logratio.exp()  # r_t, one per token
                with torch.no_grad():
                    old_approx_kl = (-logratio).mean()
                    approx_kl = ((ratio - 1) - logratio).mean()
                    clipfracs.append(((ratio - 1.0).abs() > args.clip_coef).float().mean().item())

                pg_loss = clipped_surrogate_loss(ratio, advantages[mb][real], args.clip_coef)
                v_loss = clipped_value_loss(newvalue[real], rollout.values[mb][real], returns[mb][real],
                                            args.vf_clip_coef)
                entropy_loss = entropy[real].mean()
                loss = pg_loss + args.vf_coef * v_loss - args.ent_coef * entropy_loss

                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()

        # --- beta: the KL of this rollout's responses to pi_ref, summed over each response, averaged over them
        kl = (rollout.logprobs - rollout.ref_logprobs).sum(1).mean().item()
        kl_ctl.update(kl, args.num_envs)

        log_responses(log, task, rollout, rewards.sum(1), global_step, run.samples)  # its return: R - beta KL
        log.update(global_step, args.batch_size, {
            "charts/learning_rate": optimizer.param_groups[0]["lr"], "losses/value_loss": v_loss.item(),
            "losses/policy_loss": pg_loss.item(), "losses/entropy": entropy_loss.item(),
            "losses/old_approx_kl": old_approx_kl.item(), "losses/approx_kl": approx_kl.item(),
            "losses/clipfrac": np.mean(clipfracs),
            "losses/explained_variance": explained_variance(returns[mask == 1].cpu().numpy(),
                                                            rollout.values[mask == 1].cpu().numpy()),
            "objective/kl": kl, "objective/kl_coef": kl_ctl.beta, "objective/scores": rollout.scores.mean().item(),
        })

        if run.after_update(iteration, global_step):  # a checkpoint every few updates; True after a Ctrl-C
            break

    run.close()


# =========================================================================================================
# The rest is plumbing, skippable on a first read: device and process settings, bad-input checks, run folders
# and logging, Ctrl-C, checkpoints and resume, evaluation and play, the --help texts
# (nothing of PPO, which is all above)
# =========================================================================================================

import ast  # (the plumbing's own imports: PPO above needs none of them)
import collections
import dataclasses
import inspect
import os
import random
import signal
import sys
import time

import tqdm
import tyro
from torch.utils.tensorboard import SummaryWriter

SCRIPT = os.path.basename(__file__)
TASKS = ("TinyReviews-v0",)


@dataclass
class Args(Hyperparameters):
    """The command line: PPO's hyperparameters (Hyperparameters, above) and the flags for running the script."""

    exp_name: str = SCRIPT[: -len(".py")]
    """name of the experiment: runs are saved in runs/<env-id>__<exp-name>__<seed>__<unix-time>/"""
    seed: int = 1
    """seed of Python, NumPy and torch: the same seed gives the same run on the CPU, pretraining and reward model
    included"""
    torch_deterministic: bool = True
    """let torch use deterministic algorithms only (torch.use_deterministic_algorithms; on CUDA with cuBLAS's
    fixed workspace): the same seed then repeats a run on the same device"""
    cuda: bool = False  # README's runs of this small model are on the CPU
    """run on CUDA when a GPU is available (--no-cuda: on the CPU even where one is)"""
    capture_video: bool = False
    """record what the policy writes, as text (there are no frames): every update's rollout under the run folder's
    samples/, and with --play every response, under samples/play-*.txt"""
    checkpoint_every: int = 10  # (the first checkpoint is saved as soon as pi_ref and R are made)
    """save runs/<run>/checkpoint.pt every this many updates, and always at the end (0: only at the end)"""
    resume: Optional[str] = None
    """continue the run saved in this checkpoint. Kept: pi_ref, the reward model, the policy and value weights, the
    optimizer, beta, the RNG states, the step count and annealing: a resumed run is the very run that never
    stopped. Flags not given take the checkpoint's values; a larger --total-timesteps trains longer, the learning
    rate then falling from its last value to 0 over the added updates. --num-envs, --num-steps, --learning-rate,
    --anneal-lr and what made pi_ref and the reward model cannot change"""
    play: Optional[str] = None
    """do not train: sample --episodes responses from the policy saved in this checkpoint, print each with its
    scores, and their means beside pi_ref's"""
    episodes: int = 10
    """how many responses --play samples"""
    eval_episodes: int = 256
    """responses sampled, to fixed prompts, for the evaluation at the end of a run (the hidden score, the valid
    share and the KL to pi_ref, beside pi_ref's own)"""

    # --- derived at runtime (not command-line flags) ---
    batch_size: tyro.conf.Suppress[int] = 0
    """token slots per rollout: num_envs x num_steps"""
    num_iterations: tyro.conf.Suppress[int] = 0
    """number of rollout + update cycles: total_timesteps // batch_size"""


# On a GPU, torch.use_deterministic_algorithms(True) lets cuBLAS multiply matrices only with a fixed workspace,
# and raises on the first matmul without one. cuBLAS reads this when CUDA starts: it is set here, as the script is
# imported, before anything touches CUDA.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


# Copied from common.runs.adam
def adam(parameters, lr: float, eps: float) -> optim.Adam:
    """torch's Adam, its update done in a few batched operations over all the parameter tensors together (foreach)
    instead of a Python loop over them."""
    return optim.Adam(parameters, lr=lr, eps=eps, foreach=True)


# Copied from common.cli.fail
def fail(message: str) -> None:
    """Bad input ends the run with one clear line on stderr and exit code 2, never a traceback."""
    print(f"{SCRIPT}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def checked_task(args: Args) -> ReviewTask:
    """The task --env-id names, or one line and exit 2 for one this script does not know."""
    if args.env_id not in TASKS:
        fail(f"--env-id {args.env_id!r} is no task of this script: it knows {', '.join(TASKS)} (for Gymnasium's "
             "environments use ppo_cartpole.py and the lessons after it)")
    return ReviewTask()


def check_args(args: Args) -> None:
    """Refuse settings that cannot work together, before anything is built. Each check applies where the script
    has the flag (grpo_rlhf_tiny.py has no critic's, ppo_rlhf_tiny.py no group)."""

    def given(*names: str) -> list[tuple[str, float]]:
        return [(name, getattr(args, name)) for name in names if hasattr(args, name)]

    for field in dataclasses.fields(args):
        value = getattr(args, field.name)
        if isinstance(value, float) and not np.isfinite(value):
            fail(f"--{field.name.replace('_', '-')} must be a finite number, got {value}")
    for name, value in given("total_timesteps", "pretrain_steps", "reward_pairs", "reward_epochs", "temperature",
                             "learning_rate", "num_envs", "num_steps", "minibatch_size", "update_epochs", "clip_coef",
                             "vf_clip_coef", "max_grad_norm", "kl_target", "kl_horizon", "d_model", "n_layers",
                             "n_heads", "episodes", "eval_episodes"):
        if value <= 0:
            fail(f"--{name.replace('_', '-')} must be positive, got {value}")
    for name, value in given("ent_coef", "vf_coef", "kl_coef", "checkpoint_every"):
        if value < 0:
            fail(f"--{name.replace('_', '-')} must not be negative, got {value}")
    for name, value in given("gamma", "gae_lambda"):
        if not 0.0 <= value <= 1.0:
            fail(f"--{name.replace('_', '-')} must be in [0, 1], got {value}")
    if not 0 <= args.seed <= 2**32 - 1:
        fail(f"--seed must be in [0, {2**32 - 1}] (NumPy's seeds), got {args.seed}")
    if not args.exp_name or "/" in args.exp_name:
        fail(f"--exp-name names one run folder (runs/<env-id>__<exp-name>__<seed>__<time>/): it cannot be empty or "
             f"hold a '/', got {args.exp_name!r}")
    if args.num_steps > 12:
        fail(f"--num-steps must be at most 12, the longest review after its prompt (the model's context is 15 "
             f"tokens), got {args.num_steps}")
    if args.d_model % args.n_heads:
        fail(f"--d-model ({args.d_model}) must be a multiple of --n-heads ({args.n_heads}): each head reads an equal "
             "share of the vector")
    if args.reward_pairs < 16:
        fail(f"--reward-pairs must be at least 16: an eighth of them is held out to measure the accuracy, got "
             f"{args.reward_pairs}")
    if hasattr(args, "group_size") and (args.group_size < 2 or args.num_envs % args.group_size):
        fail(f"--group-size must be at least 2 (one response has no group to be measured against) and divide "
             f"--num-envs ({args.num_envs}), got {args.group_size}")
    if args.minibatch_size > args.num_envs or args.num_envs % args.minibatch_size:
        fail(f"--num-envs ({args.num_envs}) must be a multiple of --minibatch-size ({args.minibatch_size}), "
             "responses per minibatch")
    if args.total_timesteps < args.num_envs * args.num_steps:
        fail(f"--total-timesteps ({args.total_timesteps}) is less than one rollout (--num-envs {args.num_envs} x "
             f"--num-steps {args.num_steps} = {args.num_envs * args.num_steps})")


MODELS = ("pretrain_steps", "reward_pairs", "reward_epochs", "temperature", "d_model", "n_layers", "n_heads")


def check_models_kept(args: Args, ckpt: dict) -> None:
    """--resume keeps pi_ref and the reward model of its checkpoint: the flags that made them cannot change."""
    for name in MODELS:
        if getattr(args, name) != ckpt["args"][name]:
            fail(f"--{name.replace('_', '-')} cannot change on --resume ({ckpt['args'][name]} in {args.resume}, "
                 f"{getattr(args, name)} now): pi_ref and the reward model were made with it")


class Run:
    """What train() needs that is not PPO, behind a few calls: the seeds and the device, the run folder, its log,
    pi_ref and the reward model made (or restored), what --resume restores, the annealing schedule, the checkpoints
    and Ctrl-C. train() makes one first, calls prepare() and start() once, alpha() at each update, after_update()
    at the end of each, and close() when the loop is done."""

    def __init__(self, args: Args, ckpt: Optional[dict]):
        self.args, self.ckpt = args, ckpt
        self.device = seed_everything(args)
        self.dir = run_folder(args)
        self.samples = os.path.join(self.dir, "samples") if args.capture_video else None

    def prepare(self, make_reference, make_reward_model) -> tuple[Agent, RewardModel]:
        """pi_ref and R: made (each phase timed, its result printed) in a new run; a resumed run's from its
        checkpoint. Both frozen from here on."""
        if self.ckpt:
            reference = Agent(self.args, ReviewTask().context).to(self.device)
            restore_agent(reference, {"agent": self.ckpt["reference"]}, self.args.resume)
            reward_model = RewardModel(reference).to(self.device)
            reward_model.load_state_dict(self.ckpt["reward_model"])
            self.accuracy = self.ckpt["reward_accuracy"]
        else:
            started = time.time()
            reference = make_reference()
            print(f"pi_ref: pretrained for {self.args.pretrain_steps} steps in {time.time() - started:.0f} s")
            started = time.time()
            reward_model, self.accuracy = make_reward_model(reference)
            print(f"reward model: held-out accuracy {self.accuracy:.3f} on {self.args.reward_pairs // 8} pairs "
                  f"({time.time() - started:.0f} s)")
        self.reference, self.reward_model = reference.requires_grad_(False), reward_model.requires_grad_(False)
        return reference, reward_model

    def start(self, agent: nn.Module, optimizer: optim.Optimizer, kl_ctl=None):
        """(global_step, first update, log): 0 and 1 for a new run, whose first checkpoint (pi_ref and R) is saved
        here; for a resumed one the checkpoint's, with the weights, the optimizer, beta (where kl_ctl adapts it),
        the RNG states and the schedule restored. From here on Ctrl-C asks for a clean stop after the update."""
        self.agent, self.optimizer, self.kl_ctl = agent, optimizer, kl_ctl
        self.checkpoint_path = os.path.join(self.dir, "checkpoint.pt")
        if self.ckpt:
            restore_agent(agent, self.ckpt, self.args.resume)
            optimizer.load_state_dict(self.ckpt["optimizer"])
            if kl_ctl:
                kl_ctl.beta = self.ckpt["kl_coef"]
            restore_rng(self.ckpt["rng"], self.device)
            self.schedule = resumed_schedule(self.ckpt["schedule"], self.ckpt["iteration"], self.args.num_iterations)
            self.global_step, start_iteration = self.ckpt["global_step"], self.ckpt["iteration"] + 1
        else:
            self.schedule = {"scale": 1.0, "num_iterations": self.args.num_iterations}
            self.global_step, start_iteration = 0, 1
        self.log = RunLog(self.args, self.dir, self.device, self.global_step)
        if not self.ckpt:
            self.log.scalar("charts/reward_model_accuracy", self.accuracy, 0)
            self.save(0)
        self.ctrl_c = CtrlC()
        return self.global_step, start_iteration, self.log

    def alpha(self, iteration: int) -> float:
        """Table 5's alpha for update `iteration`: 1 - (i - 1) / num_iterations, falling from 1 toward 0 (on a
        resumed, longer run from its last value: resumed_schedule)."""
        return self.schedule["scale"] * (1.0 - (iteration - 1) / self.schedule["num_iterations"])

    def save(self, iteration: int) -> None:
        save_checkpoint(self.checkpoint_path, self.args, self.agent, self.optimizer, self.global_step, iteration,
                        self.schedule, reference=self.reference.state_dict(),
                        reward_model=self.reward_model.state_dict(), reward_accuracy=self.accuracy,
                        kl_coef=self.kl_ctl.beta if self.kl_ctl else self.args.kl_coef)

    def after_update(self, iteration: int, global_step: int) -> bool:
        """A checkpoint every --checkpoint-every updates, after the last and after a Ctrl-C (True: stop)."""
        self.global_step = global_step
        every = self.args.checkpoint_every
        if (every and iteration % every == 0) or iteration == self.args.num_iterations or self.ctrl_c.requested:
            self.save(iteration)
        return self.ctrl_c.requested

    def close(self) -> None:
        """At the end: the policy and pi_ref evaluated on the same prompts; the log closed; where the checkpoint is."""
        if not self.ctrl_c.requested:
            report = evaluate(self.args, self.agent, self.reference, self.reward_model, self.args.eval_episodes)
            for name, value in report.items():
                self.log.scalar(f"eval/{name}", value, self.global_step)
            print("evaluation, " + ", ".join(f"{name} {value:.3f}" for name, value in report.items()))
        self.log.close()
        print(f"checkpoint: {self.checkpoint_path} (step {self.global_step})")
        print(f"read it: python {SCRIPT} --play {self.checkpoint_path} --episodes 10")
        if self.ctrl_c.requested:
            raise SystemExit(130)


def log_responses(log: RunLog, task: ReviewTask, rollout: Rollout, returns: torch.Tensor, step: int,
                  samples: Optional[str]) -> None:
    """Each response is an episode: its return (`returns`, R - beta KL in PPO, R in GRPO) and length to the log, the
    rollout's hidden score and share of grammatical responses (which PPO never sees); with --capture-video the
    responses as text, to samples/step-<step>.txt."""
    texts = torch.cat([rollout.prompts, rollout.responses], dim=1).tolist()
    hidden = np.array([task.hidden_score(text) for text in texts])
    for episodic_return, length in zip(returns.tolist(), rollout.mask.sum(1).tolist()):
        log.episode(episodic_return, int(length), step)
    log.scalar("objective/hidden_score", hidden.mean(), step)
    log.scalar("objective/valid_share", (hidden != INVALID).mean(), step)
    if samples:
        os.makedirs(samples, exist_ok=True)
        with open(os.path.join(samples, f"step-{step}.txt"), "w") as f:
            f.writelines(f"{task.decode(text)}\t{score:+.2f}\n" for text, score in zip(texts, hidden))


def evaluate(args: Args, agent: Agent, reference: Agent, reward_model: RewardModel, episodes: int,
             print_responses: int = 0, samples_file: Optional[str] = None) -> dict:
    """`episodes` responses of the policy and of pi_ref to the same prompts (drawn from a generator of their own,
    seeded with --seed, so every evaluation sees the same): the means of the hidden score, the share the grammar
    accepts, R's score, and KL(pi || pi_ref) per response (the mean over them of sum_t log pi - log pi_ref).
    The RNG states are put back after: evaluating leaves training unchanged."""
    device = next(agent.parameters()).device
    states = rng_states(device)
    task, report = ReviewTask(), {}
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    prompts = task.prompts(episodes).to(device)
    for name, model in (("", agent), ("ref_", reference)):
        torch.manual_seed(args.seed + 1)
        with torch.inference_mode():
            responses = generate(model, prompts, args.num_steps)
            text = torch.cat([prompts, responses], dim=1)
            start, mask = prompts.shape[1] - 1, response_mask(responses)
            logprobs = model.get_action_and_value(text[:, :-1], text[:, 1:])[1][:, start:]  # log pi(a_t|s_t)
            ref_logprobs = reference.get_action_and_value(text[:, :-1], text[:, 1:])[1][:, start:]
            scores = torch.where((responses == END).any(1), reward_model(text, last_token(text)), args.no_end_penalty)
        hidden = np.array([task.hidden_score(t) for t in text.tolist()])
        report.update({f"{name}hidden_score": hidden.mean(), f"{name}hidden_score_std": hidden.std(),
                       f"{name}valid_share": (hidden != INVALID).mean(),
                       f"{name}reward_model_score": scores.mean().item(),
                       f"{name}kl": ((logprobs - ref_logprobs) * mask).sum(1).mean().item()})
        if name == "":
            lines = [f"{task.decode(t)}  (hidden {h:+.1f}, reward model {s:+.2f})"
                     for t, h, s in zip(text.tolist(), hidden, scores.tolist())]
            for line in lines[:print_responses]:
                print(line)
            if samples_file:
                os.makedirs(os.path.dirname(samples_file), exist_ok=True)
                with open(samples_file, "w") as f:
                    f.writelines(line + "\n" for line in lines)
    del report["ref_kl"]  # (0: pi_ref against itself)
    restore_rng(states, device)
    return report


def play(args: Args, ckpt: dict) -> None:
    """Sample --episodes responses from the checkpoint's policy; print each, then the means beside pi_ref's."""
    reference = Agent(args, ReviewTask().context)
    restore_agent(reference, {"agent": ckpt["reference"]}, args.play)
    agent, reward_model = copy.deepcopy(reference), RewardModel(reference)
    restore_agent(agent, ckpt, args.play)
    reward_model.load_state_dict(ckpt["reward_model"])
    samples = os.path.join(os.path.dirname(os.path.abspath(args.play)), "samples", f"play-{int(time.time())}.txt")
    report = evaluate(args, agent, reference, reward_model, args.episodes, print_responses=args.episodes,
                      samples_file=samples if args.capture_video else None)
    print(f"over {args.episodes} responses: " + ", ".join(f"{name} {value:.3f}" for name, value in report.items()))
    if args.capture_video:
        print(f"samples: {samples}")


# Copied from common.checkpoints.save_checkpoint
def save_checkpoint(path: str, args: Args, agent: nn.Module, optimizer: optim.Optimizer, global_step: int,
                    iteration: int, schedule: dict, **extra) -> None:
    """Write to a temporary file, then rename: a crash mid-write never leaves a half-written checkpoint. `extra`:
    what a lesson keeps besides (the language lessons' pi_ref, reward model and beta)."""
    state = {
        "script": SCRIPT,
        "args": dataclasses.asdict(args),
        "agent": agent.state_dict(),
        "optimizer": optimizer.state_dict(),
        "global_step": global_step,
        "iteration": iteration,
        "schedule": schedule,
        "rng": rng_states(next(agent.parameters()).device),
        **extra,
    }
    torch.save(state, path + ".tmp")
    os.replace(path + ".tmp", path)


# Copied from common.runs.seed_everything
def seed_everything(args: Args) -> torch.device:
    """Seed Python, NumPy and torch (--seed), deterministic algorithms if asked; return the device to train on."""
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(args.torch_deterministic)
    return torch.device("cuda" if torch.cuda.is_available() and args.cuda else "cpu")


# Copied from common.runs.run_folder
def run_folder(args: Args) -> str:
    """runs/<env-id>__<exp-name>__<seed>__<unix time>/ for a new run; a resumed run keeps writing into its own
    folder, and TensorBoard continues its curves."""
    if args.resume:
        return os.path.dirname(os.path.abspath(args.resume))
    return os.path.join("runs", f"{args.env_id}__{args.exp_name}__{args.seed}__{int(time.time())}")


# Copied from common.runs.RunLog
class RunLog:
    """What a run reports: scalars to TensorBoard in the run folder, the progress bar with the mean return of the
    last 20 episodes, and the steps per second. The folder is made here, once the env and the checkpoint have been
    accepted, so that a refused run leaves nothing behind. Under torchrun only rank 0 writes."""

    def __init__(self, args: Args, run_dir: str, device: torch.device, global_step: int, rank: int = 0):
        self.writer = None
        if rank == 0:
            os.makedirs(run_dir, exist_ok=True)
            # A resumed run goes on from its checkpoint's step G. What an earlier process logged past G (the episodes
            # of a rollout that a Ctrl-C gave up, or everything after the last checkpoint before a crash) is not in
            # this run's history: purge_step has TensorBoard drop the earlier events from step G + 1 on.
            self.writer = SummaryWriter(run_dir, purge_step=global_step + 1 if args.resume else None)
            self.writer.add_text("hyperparameters", "|param|value|\n|-|-|\n" + "\n".join(
                f"|{k}|{v}|" for k, v in dataclasses.asdict(args).items()))
            print(f"run folder {run_dir}, training on {device} (curves: tensorboard --logdir {os.path.dirname(run_dir)})")
        self.recent_returns = collections.deque(maxlen=20)
        self.progress = tqdm.tqdm(total=args.total_timesteps, initial=global_step, unit="step", dynamic_ncols=True,
                                  disable=rank != 0)
        self.start_time, self.start_step = time.time(), global_step

    def scalar(self, tag: str, value: float, step: int) -> None:
        if self.writer is not None:
            self.writer.add_scalar(tag, value, step)

    def episode(self, episodic_return: float, length: int, step: int) -> None:
        self.recent_returns.append(episodic_return)
        self.scalar("charts/episodic_return", episodic_return, step)
        self.scalar("charts/episodic_length", length, step)

    def update(self, global_step: int, steps: int, scalars: dict) -> None:
        """After an update: its scalars, the steps per second, and the progress bar moved on by `steps`."""
        sps = int((global_step - self.start_step) / (time.time() - self.start_time))
        for tag, value in {**scalars, "charts/SPS": sps}.items():
            self.scalar(tag, value, global_step)
        self.progress.update(steps)
        if self.recent_returns:
            self.progress.set_postfix_str(
                f"return(last {len(self.recent_returns)}) {np.mean(self.recent_returns):.1f}, SPS {sps}")

    def close(self) -> None:
        self.progress.close()
        if self.writer is not None:
            self.writer.close()


# Copied from common.runs.explained_variance
def explained_variance(returns: np.ndarray, values: np.ndarray) -> float:
    """How much of the value targets' variance V explains: 1 is a perfect critic, 0 no better than a constant."""
    var_returns = np.var(returns)
    return 1 - np.var(returns - values) / var_returns if var_returns > 0 else float("nan")


# Copied from common.runs.CtrlC
class CtrlC:
    """Ctrl-C asks for a clean stop: the current update finishes, a checkpoint is saved, the script exits (130).
    A second Ctrl-C quits at once."""

    def __init__(self):
        self.requested = False
        signal.signal(signal.SIGINT, self.request)

    def request(self, signum, frame) -> None:
        self.requested = True
        signal.signal(signal.SIGINT, signal.default_int_handler)
        tqdm.tqdm.write("Ctrl-C: saving a checkpoint after this update (press again to quit without saving)")


# Copied from common.checkpoints.load_checkpoint
def load_checkpoint(path: str) -> dict:
    """Read a checkpoint of this script, or fail with one line that says what is wrong with the file."""
    if os.path.isdir(path):
        fail(f"{path} is a folder, not a checkpoint (a run's is runs/<run>/checkpoint.pt)")
    if not os.path.isfile(path):
        fail(f"no checkpoint at {path}")
    if os.path.getsize(path) == 0:
        fail(f"{path} is empty (0 bytes), not a checkpoint")
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # truncated, unreadable, not a torch file, or holding objects that weights_only refuses
        reason = next((line.strip() for line in str(e).splitlines() if line.strip()), "")[:120]  # (can be empty)
        fail(f"{path} is not a readable checkpoint ({type(e).__name__}{': ' if reason else ''}{reason})")
    if not isinstance(ckpt, dict) or not {"script", "args", "agent"} <= ckpt.keys():
        fail(f"{path} is not a checkpoint of this library")
    if ckpt["script"] != SCRIPT:
        fail(f"{path} was written by {ckpt['script']}, not {SCRIPT}")
    missing = {"optimizer", "global_step", "iteration", "schedule", "rng"} - ckpt.keys()
    if missing and ckpt.get("policy") is not True:  # (a policy file holds the weights alone: benchmarks/ship.py)
        fail(f"{path} is an incomplete checkpoint (no {', '.join(sorted(missing))})")
    return ckpt


# Copied from common.checkpoints.check_resume
def check_resume(args: Args, ckpt: dict) -> None:
    """--resume goes on update by update, so the shape of an update and the learning rate's schedule cannot change;
    and there must be steps left."""
    for name in ("num_envs", "num_steps"):  # each where the script has it (ppo_cartpole.py has one env)
        if hasattr(args, name) and getattr(args, name) != ckpt["args"][name]:
            fail(f"--{name.replace('_', '-')} cannot change on --resume ({ckpt['args'][name]} in {args.resume}, "
                 f"{getattr(args, name)} now): the step count, the buffers and the annealing go update by update")
    # The learning rate goes on from the optimizer's state (--no-anneal-lr: Adam's saved rate) and the annealing
    # schedule, so the flags that set it cannot change: they would be ignored, or raise the rate.
    for name in ("learning_rate", "vf_learning_rate", "anneal_lr", "anneal_clip", "clip_coef"):
        if name == "clip_coef" and not getattr(args, "anneal_clip", False):  # (applied as given where not annealed)
            continue
        if hasattr(args, name) and getattr(args, name) != ckpt["args"][name]:
            fail(f"--{name.replace('_', '-')} cannot change on --resume ({ckpt['args'][name]} in {args.resume}, "
                 f"{getattr(args, name)} now): a resumed run goes on with the step size and annealing it started "
                 "with; start a new run to change them")
    if ckpt["global_step"] + getattr(args, "num_envs", 1) * args.num_steps > args.total_timesteps:
        fail(f"{args.resume} has already trained {ckpt['global_step']} steps; "
             f"give a larger --total-timesteps to train longer")


# Copied from common.resume.resumed_schedule
def resumed_schedule(schedule: dict, iteration: int, num_iterations: int) -> dict:
    """The annealing schedule of a run resumed after update `iteration`: {"scale", "num_iterations"}, with alpha_i =
    scale * (1 - (i - 1) / num_iterations) (a new run's scale is 1). Same length: it goes on unchanged. A new
    --total-timesteps: the scale makes alpha go on from the value the last update had down to 0 over the new
    length, so resuming never raises the learning rate (nor an annealed clip range)."""
    if schedule["num_iterations"] == num_iterations:
        return schedule
    last = schedule["scale"] * (1.0 - (iteration - 1) / schedule["num_iterations"])  # alpha of update `iteration`
    # scale' * (1 - iteration / num_iterations) = last: update iteration + 1 starts where update `iteration` was
    return {"scale": last * num_iterations / (num_iterations - iteration), "num_iterations": num_iterations}


# Copied from common.resume.rng_states
def rng_states(device: torch.device) -> dict:
    """Every random generator this process draws from: Python's, NumPy's, torch's CPU one and the GPU's in use."""
    np_state = np.random.get_state()
    states = {
        "python": random.getstate(),
        "numpy": (np_state[0], np_state[1].tolist(), *np_state[2:]),
        "torch": torch.get_rng_state(),
    }
    if device.type == "cuda":
        states["cuda"] = torch.cuda.get_rng_state(device)
    return states


# Copied from common.resume.restore_rng
def restore_rng(states: dict, device: torch.device) -> None:
    random.setstate(states["python"])
    np_state = states["numpy"]
    np.random.set_state((np_state[0], np.array(np_state[1], dtype=np.uint32), *np_state[2:]))
    torch.set_rng_state(states["torch"])
    if device.type == "cuda" and "cuda" in states:
        torch.cuda.set_rng_state(states["cuda"], device)


# Copied from common.checkpoints.restore_agent
def restore_agent(agent: nn.Module, ckpt: dict, path: str) -> None:
    try:
        agent.load_state_dict(ckpt["agent"])
    except RuntimeError as e:
        fail(f"the network in {path} does not fit this one ({str(e).splitlines()[-1].strip()})")


# Copied from common.checkpoints.args_from_checkpoint
def args_from_checkpoint(args: Args) -> tuple[Args, dict]:
    """--resume / --play: the checkpoint's Args become the defaults, and the flags given override them."""
    path = args.resume or args.play
    ckpt = load_checkpoint(path)
    if args.resume and ckpt.get("policy") is True:
        fail(f"{path} is a policy file: it holds no optimizer, annealing schedule or random generators, so it can "
             f"only be played (--play {path}), not resumed")
    saved = {k: v for k, v in ckpt["args"].items() if k in {f.name for f in dataclasses.fields(Args)}}
    defaults = dataclasses.replace(Args(**saved), resume=args.resume, play=args.play)
    args = tyro.cli(Args, default=defaults, description=__doc__)
    if args.env_id != ckpt["args"]["env_id"]:
        fail(f"{path} holds a policy for {ckpt['args']['env_id']}, not for --env-id {args.env_id}")
    return args, ckpt


# Copied from common.cli.one_line_help
def one_line_help(cls: type) -> type:
    """Hand tyro each field's docstring as one line, which --help wraps to the terminal's width. tyro keeps the
    line breaks of a docstring whose continuation lines are indented (it joins only lines that start with a
    letter), so --help would break its lines where the source does, mid-sentence. It reads a dataclass field's
    "help" metadata before the docstring: that is where the joined text goes. The fields cls inherits (Args's from
    Hyperparameters) are read in their own class's source. Returns cls."""
    if cls.__dict__.get("help_joined"):  # (once per process: reading the source takes tens of milliseconds)
        return cls
    for klass in [k for k in cls.__mro__ if dataclasses.is_dataclass(k)]:
        body = ast.parse(inspect.getsource(klass)).body[0].body
        for node, doc in zip(body, body[1:]):
            if isinstance(node, ast.AnnAssign) and isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant):
                field = cls.__dataclass_fields__[node.target.id]
                field.metadata = {**field.metadata, "help": " ".join(doc.value.value.split())}
    cls.help_joined = True
    return cls



def main() -> None:
    args = tyro.cli(one_line_help(Args), description=__doc__)
    if "" in (args.resume, args.play):  # (an empty path would read as not given: a training instead of a play)
        fail(f"--{'resume' if args.resume == '' else 'play'} needs the path of a checkpoint, got ''")
    if args.resume and args.play:
        fail("give either --resume or --play, not both")
    ckpt = None
    if args.resume or args.play:
        args, ckpt = args_from_checkpoint(args)
        if not {"reference", "reward_model", "kl_coef"} <= ckpt.keys():
            fail(f"{args.resume or args.play} is an incomplete checkpoint (no pi_ref, reward model or beta)")
    check_args(args)
    if args.resume:
        check_resume(args, ckpt)
        check_models_kept(args, ckpt)
    # One thread: these batches are small, and a second thread that waits on a busy core slows every step.
    torch.set_num_threads(1)
    try:
        play(args, ckpt) if args.play else train(args, ckpt)
    except KeyboardInterrupt:
        print(f"{SCRIPT}: interrupted", file=sys.stderr)
        raise SystemExit(130)


if __name__ == "__main__":
    main()
