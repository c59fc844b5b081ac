"""Chapter 10: the field's other samplers in float64, written from the engines' own code.

Every rule below is read from the engine that has it (the commit read_file showed, cited per
function), never from decodebook's C++. Same conventions as sampling.py: a processor edits a copy
of the logits (V) and removes a token with -inf; the candidates are the finite logits; each
processor returns (new logits, margin), the margin being how far its decisions were from flipping
(see "Margins" below).

  typical_p (hf)     HF TypicalLogitsWarper: H = -sum p ln p; sort by |-ln p - H| ascending;
                     last = #(cumsum < mass) (clamped); keep every score <= the score at last, and
                     the first min_keep of the sorted list
  typical_p (llama)  llama.cpp llama_sampler_typical: same sort; stop at the first i with
                     cumsum > mass and i >= min_keep - 1, keep the first i + 1
  epsilon_cutoff     HF EpsilonLogitsWarper: remove p < eps unless the logit is >= the min_keep-th largest
  eta_cutoff         HF EtaLogitsWarper: the same with eta = min(eps, sqrt(eps) exp(-H))
  top_n_sigma        llama.cpp: keep z >= max - n sigma (mean and population sigma of the finite
                     logits); n <= 0 or one candidate: nothing
  xtc                llama.cpp llama_sample_xtc_apply: if coin <= probability, threshold <= 0.5 and
                     >= 2 candidates: in candidate order, pos_last = the last index of the leading
                     run with p >= threshold; if pos_last > 0 and n - pos_last >= min_keep, remove the
                     first pos_last. The coin is xtc_coin(seed, step) (other_samplers.hpp), not
                     llama.cpp's mt19937
  dry                llama.cpp llama_sampler_dry_apply (koboldcpp): over the last last_n tokens of the
                     context (prompt + output, as llama-server accepts the prompt), rep_limit from the
                     latest sequence breaker (head + tail), L(t) = max over earlier ends j of the
                     common suffix length of context[..j] and the context (capped at rep_limit) for
                     t = context[j + 1]; z_t -= mult * base^(L - allowed) when L >= allowed, the
                     exponent clamped to int(88.7228391 / ln base); single-token breakers never
                     penalised. Written as that definition (quadratic); dry_z_algorithm is the
                     engine's reverse Z-algorithm, and the self-test holds them equal
  mirostat v2        llama.cpp llama_sampler_mirostat_v2_apply: softmax, keep the candidates (by p)
                     up to the first with -log2 p > mu (at least one), renormalise, draw, mu -= eta
                     (-log2 p'(x) - tau) with p' the renormalised probability
  mirostat v1        llama.cpp llama_sampler_mirostat_apply: s_hat from the top m probabilities,
                     k = (eps 2^mu / (1 - V^-eps))^(1/s_hat), eps = s_hat - 1, top max(int(k), 1),
                     renormalise, draw, the same mu update (V = the model's vocabulary size)
  dynamic temp.      llama.cpp llama_sampler_temp_ext_apply: with range > 0 and n > 1 candidates,
                     T = T_min + (T_max - T_min) (H / ln n)^exponent, then z / T
  logit_bias         llama.cpp / vLLM: z_id += bias (hf order: HF's sequence_bias of one token)
  sequence_bias      HF SequenceBiasLogitsProcessor: length 1 always; longer when its prefix ends
                     prompt + output (sequences longer than that context are skipped)
  bad_words_ids      HF NoBadWordsLogitsProcessor: the same with -inf, entries equal to [eos]
                     dropped; vLLM (bad_words.py): the prefix must end the OUTPUT, nothing dropped
  suppress_tokens    HF: -inf always; begin_suppress_tokens: -inf at the first new token only
  min_new_tokens     HF: every EOS id -inf while fewer than n tokens were generated

The chain (Chain10) in each engine's order (docs/design.md, "The field's other samplers"):
  hf         sequence_bias (logit_bias entries first, as sequences of one), repetition,
             presence/frequency, no_repeat_ngram, bad_words, min_new_tokens, suppress,
             begin_suppress (HF's _get_logits_processor) || temperature, top_k, top_p, min_p,
             typical_p (HF rule), epsilon, eta
  llama.cpp  logit_bias, min_new_tokens, repetition, presence/frequency, no_repeat_ngram, dry ||
             top_n_sigma, top_k, typical_p (llama.cpp rule), top_p, min_p, xtc, temperature
             (dynamic when dynatemp_range > 0); with mirostat 1 or 2: logit_bias, min_new_tokens ||
             temperature, then mirostat draws the token
  vllm       bad_words, min_new_tokens, logit_bias, repetition, presence/frequency,
             no_repeat_ngram || temperature, min_p, top_k, top_p
(Before || the stages add, mask or scale logits; only the repetition penalty, sign-aware, does not
commute with a bias, so the biases' place matters only with it.)
Stages before || run in greedy mode too; greedy = do_sample false or temperature 0 (argmax). Under
llama.cpp's order with do_sample, temperature 0 runs the stages after || too (common_sampler_init
has no greedy shortcut): temperature 0 keeps the largest logit left (llama_sampler_temp_impl), and a
dynamic-temperature range > 0 at temperature 0 samples at T in [0, range].

Margins (as sampling.py: a golden is trusted when every decision is >= 1e-4 from flipping; the C++
runs in float32, logits within ~1e-5 of these):
  typical    |cumsum - mass| at every position the mass test reads (and, where two neighbours'
             scores are within 1e-4, the cumsum with them swapped), and the score gaps around the cut
  eps / eta  |ln p - ln threshold| over the candidates (log space: a float32 p is off by a relative
             ~1e-5, so an absolute margin on a 3e-4 threshold would mean nothing), and the logit
             gap at the min_keep cut when it forced a token in
  top_n_sig  |z - (max - n sigma)| over the candidates
  xtc        |coin - probability|; when it applies, |ln p - ln threshold| and the logit gap between
             the last two tokens above the threshold
  mirostat   v2: |ln p + mu ln 2| over the candidates (the surprise test, in nats); v1: k's relative
             distance to the nearest integer / 10 (k is a power of s_hat: its float32 error is ~10x
             its inputs'); then the coin and rank margins of the draw on the renormalised p
  dry, biases, dynatemp: no decision of their own (integers, or continuous edits): the draw's margins
             downstream hold them

Self-check: /usr/bin/python3 tests/reference/other_samplers.py
"""
import math

import numpy
import torch

import gpt2
import rng
import sampling

torch.set_num_threads(1)

INF = float("inf")
NEG_INF = float("-inf")
LN2 = math.log(2.0)
DRY_FLOAT_MAX_LOG = 88.7228391  # llama.cpp's FLOAT_MAX_LOG in llama_sampler_dry_apply
DRY_MAX_CHAR_LEN = 40           # llama_sampler_init_dry: a breaker is cut to 40 bytes
DRY_MAX_SEQ_LEN = 20            # ... and its tail to 20 tokens
MIROSTAT_M = 100                # common_sampler_init passes m = 100 to llama_sampler_init_mirostat
XTC_SALT = 0x5854430000000000   # "XTC" in the high bytes (other_samplers.hpp, xtc_coin)

# Every knob the chain reads, with GenerationConfig's defaults (generation_config.hpp). A golden
# writes only the knobs it changes (and do_sample), as set_knob takes them.
KNOB_DEFAULTS = {
    "do_sample": False,
    "temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0, "min_tokens_to_keep": 1,
    "min_new_tokens": 0,
    "repetition_penalty": 1.0, "penalty_scope": "prompt_and_output", "penalty_last_n": 64,
    "presence_penalty": 0.0, "frequency_penalty": 0.0, "no_repeat_ngram_size": 0,
    "typical_p": 1.0, "epsilon_cutoff": 0.0, "eta_cutoff": 0.0, "top_n_sigma": -1.0,
    "xtc_probability": 0.0, "xtc_threshold": 0.1,
    "mirostat": 0, "mirostat_tau": 5.0, "mirostat_eta": 0.1,
    "dynatemp_range": 0.0, "dynatemp_exponent": 1.0,
    "dry_multiplier": 0.0, "dry_base": 1.75, "dry_allowed_length": 2, "dry_penalty_last_n": -1,
    "dry_sequence_breakers": ["\n", ":", "\"", "*"],
    "logit_bias": [], "sequence_bias": [], "bad_words_ids": [], "suppress_tokens": [],
    "begin_suppress_tokens": [],
}
INT_KNOBS = ("top_k", "min_tokens_to_keep", "min_new_tokens", "penalty_last_n", "no_repeat_ngram_size",
             "mirostat", "dry_allowed_length", "dry_penalty_last_n")


def g(x):
    return sampling.g(x)

# ----------------------------------------------------------------------------- helpers


def candidates(z):
    return [i for i in range(z.numel()) if float(z[i]) != NEG_INF]


def keep_only(z, kept):
    out = torch.full_like(z, NEG_INF)
    if kept:
        idx = torch.tensor(sorted(kept), dtype=torch.long)
        out[idx] = z[idx]
    return out


def entropy_of(probs):
    """-sum p ln p over p > 0 (nats)."""
    return -sum(p * math.log(p) for p in probs.tolist() if p > 0)


def log_distance(p, threshold):
    """|ln p - ln threshold|, the margin of a p >= threshold test (inf for a zero threshold)."""
    if threshold <= 0 or p <= 0:
        return INF
    return abs(math.log(p) - math.log(threshold))

# ----------------------------------------------------------------------------- truncation


def typical_keep(probs, mass, min_keep=1, rule="hf"):
    """(kept ids, margin). huggingface/transformers src/transformers/generation/logits_process.py
    (commit 00857b6cf63a4fa05cbd9bdc8a4fd78b6168c5af) TypicalLogitsWarper.__call__; ggml-org/llama.cpp
    src/llama-sampler.cpp (commit 00efb3e184262872916bf136b3df63c1822a19bd) llama_sampler_typical_apply.
    Equal scores are ordered by candidate order (p descending, id ascending): HF's torch.sort and
    llama.cpp's std::sort leave them unspecified, and a golden keeps no case where it matters."""
    if not 0 < mass <= 1:
        raise ValueError("typical_p = %r, must be in (0, 1]" % (mass,))
    order = sampling.candidate_order(probs)
    if mass >= 1:
        return list(order), INF
    p = probs.tolist()
    H = entropy_of(probs)
    score = {i: abs(-math.log(p[i]) - H) for i in order}
    rank = {i: r for r, i in enumerate(order)}
    srt = sorted(order, key=lambda i: (score[i], rank[i]))
    n = len(srt)
    cum, run = [], 0.0
    for i in srt:
        run += p[i]
        cum.append(run)

    def cum_margin(j):  # |cum_j - mass|, and with j and j + 1 swapped when their scores nearly tie
        m = abs(cum[j] - mass)
        if j + 1 < n and score[srt[j + 1]] - score[srt[j]] < 1e-4:
            m = min(m, abs(cum[j] - p[srt[j]] + p[srt[j + 1]] - mass))
        return m

    def gap(a, b):
        return score[srt[b]] - score[srt[a]] if 0 <= a and b < n else INF

    if rule == "hf":
        last = min(sum(1 for c in cum if c < mass), n - 1)
        s_star = score[srt[last]]
        kept = [i for r, i in enumerate(srt) if score[i] <= s_star or r < min_keep]
        margin = min(min(cum_margin(j) for j in range(n)), gap(last, last + 1), gap(last - 1, last))
        if min_keep > last + 1:
            margin = min(margin, gap(min_keep - 1, min_keep))
        return kept, margin
    if rule != "llama.cpp":
        raise ValueError("unknown typical rule %r" % (rule,))
    last, margin = n, INF
    for j in range(n):
        if j >= min_keep - 1:
            margin = min(margin, cum_margin(j))
            if cum[j] > mass:
                last = j + 1
                break
    margin = min(margin, gap(last - 1, last))
    return srt[:last], margin


def apply_typical_p(z, mass, min_keep=1, rule="hf"):
    if mass >= 1:
        return z.clone(), INF
    kept, margin = typical_keep(sampling.softmax(z), mass, min_keep, rule)
    return keep_only(z, kept), margin


def cutoff_keep(z, threshold, min_keep=1):
    """HF's epsilon/eta rule for a given threshold: remove p < threshold unless z >= the
    min_keep-th largest logit. (kept ids, margin)."""
    probs = sampling.softmax(z)
    p = probs.tolist()
    cand = candidates(z)
    desc = sorted((float(z[i]) for i in cand), reverse=True)
    kth = desc[min(min_keep, len(desc)) - 1]
    kept = [i for i in cand if p[i] >= threshold or float(z[i]) >= kth]
    margin = min(log_distance(p[i], threshold) for i in cand)
    # the min_keep cut matters when a token below the threshold is forced in
    if any(p[i] < threshold and float(z[i]) >= kth for i in cand) and len(desc) > min_keep:
        margin = min(margin, kth - desc[min_keep])
    return kept, margin


def apply_epsilon_cutoff(z, epsilon, min_keep=1):
    """HF EpsilonLogitsWarper (logits_process.py, commit 00857b6cf63a4fa05cbd9bdc8a4fd78b6168c5af)."""
    if epsilon <= 0:
        return z.clone(), INF
    kept, margin = cutoff_keep(z, epsilon, min_keep)
    return keep_only(z, kept), margin


def eta_threshold(probs, epsilon):
    return min(epsilon, math.sqrt(epsilon) * math.exp(-entropy_of(probs)))


def apply_eta_cutoff(z, epsilon, min_keep=1):
    """HF EtaLogitsWarper (logits_process.py, commit 00857b6cf63a4fa05cbd9bdc8a4fd78b6168c5af):
    the entropy is Categorical(logits=scores).entropy(), i.e. over the candidates."""
    if epsilon <= 0:
        return z.clone(), INF
    kept, margin = cutoff_keep(z, eta_threshold(sampling.softmax(z), epsilon), min_keep)
    return keep_only(z, kept), margin


def apply_top_n_sigma(z, n):
    """llama.cpp llama_sampler_top_n_sigma_apply (src/llama-sampler.cpp, commit
    00efb3e184262872916bf136b3df63c1822a19bd): mean and population sigma over the finite logits."""
    cand = candidates(z)
    if n <= 0 or len(cand) <= 1:
        return z.clone(), INF
    vals = [float(z[i]) for i in cand]
    mx = max(vals)
    mean = sum(vals) / len(vals)
    sigma = math.sqrt(sum((v - mean) ** 2 for v in vals) / len(vals))
    cut = mx - n * sigma
    kept = [i for i in cand if float(z[i]) >= cut]
    return keep_only(z, kept), min(abs(v - cut) for v in vals)


def xtc_coin(seed, step):
    """Rng(seed ^ splitmix64(XTC_SALT + step)).coin(): a pure function of the seed and the step."""
    salt = rng.splitmix64((XTC_SALT + step) & rng.MASK64)[1]
    return rng.Rng((seed ^ salt) & rng.MASK64).coin()


def apply_xtc(z, probability, threshold, min_keep, coin):
    """llama.cpp llama_sample_xtc_apply (src/llama-sampler.cpp, commit
    00efb3e184262872916bf136b3df63c1822a19bd): it returns when chance > probability, so it applies
    when coin <= probability."""
    cand = candidates(z)
    if probability <= 0 or threshold > 0.5 or len(cand) < 2:
        return z.clone(), INF
    margin = abs(coin - probability)
    if coin > probability:
        return z.clone(), margin
    probs = sampling.softmax(z)
    p = probs.tolist()
    order = sampling.candidate_order(probs)
    pos_last = 0
    for r, i in enumerate(order):
        if p[i] >= threshold:
            pos_last = r
        else:
            break
    margin = min(margin, min(log_distance(p[i], threshold) for i in order))
    if pos_last > 0:
        margin = min(margin, float(z[order[pos_last - 1]]) - float(z[order[pos_last]]))
    if len(order) - pos_last >= min_keep and pos_last > 0:
        return keep_only(z, order[pos_last:]), margin
    return z.clone(), margin

# ----------------------------------------------------------------------------- DRY


def dry_breaker_sequences(tok, breakers):
    """llama.cpp get_overlapping_token_sequences (src/llama-sampler.cpp, commit
    00efb3e184262872916bf136b3df63c1822a19bd), for each breaker (empty ones skipped, cut to 40 bytes)
    with max_tail_len 20: a token whose text contains the breaker is a head with no tail; a token
    whose text ends with a proper prefix of the breaker (at any occurrence of its first byte) is a
    head whose tail is the tokenization of the rest (no special tokens parsed). Returns the sorted
    list of distinct [head, tail...]."""
    out = set()
    V = len(tok.id_to_token)
    for b in breakers:
        s = b.encode("utf-8") if isinstance(b, str) else bytes(b)
        if not s:
            continue
        s = s[:DRY_MAX_CHAR_LEN]
        for t in range(V):
            word = tok.decode([t])
            if s in word:
                out.add((t,))
                continue
            pos = word.find(s[:1])
            while pos != -1:
                i, match = 1, True
                while i < len(s) and pos + i < len(word):
                    if word[pos + i] != s[i]:
                        match = False
                        break
                    i += 1
                if match:
                    tail = tok._encode_ordinary(s[i:])[:DRY_MAX_SEQ_LEN]
                    out.add(tuple([t] + tail))
                pos = word.find(s[:1], pos + 1)
    return [list(x) for x in sorted(out)]


def dry_window(context, last_n, n_ctx):
    n = len(context)
    eff = n_ctx if last_n == -1 else max(last_n, 0)
    return list(context[max(0, n - min(n, eff, n_ctx)):])


def dry_rep_limit(window, breakers):
    """Step 1 of llama_sampler_dry_apply: walking back from the newest token, the first head whose
    longest matching tail follows it limits a repeat to the tokens after it."""
    heads = {}
    for seq in breakers:
        heads.setdefault(seq[0], []).append(list(seq[1:]))
    n = len(window)
    rat = lambda i: window[n - 1 - i]  # i tokens back from the newest
    for i in range(n):
        tails = heads.get(rat(i))
        if tails is None:
            continue
        longest = -1
        for tail in tails:
            if longest < len(tail) <= i and all(tail[o] == rat(i - o - 1) for o in range(len(tail))):
                longest = len(tail)
        if longest >= 0:
            return i - longest
    return n


def dry_repeat_lengths(window, rep_limit):
    """{token: L}: for every earlier end j, the common suffix of window[..j] and window (capped)."""
    n = len(window)
    out = {}
    for j in range(n - 1):
        k = 0
        while k <= j and window[j - k] == window[n - 1 - k]:
            k += 1
        out_len = min(k, rep_limit)
        t = window[j + 1]
        out.setdefault(t, [])
        out[t].append(out_len)
    return {t: max(v) for t, v in out.items()}


def dry_z_algorithm(window, rep_limit):
    """llama.cpp's step 2 as written there (reverse Z-algorithm, counts capped at rep_limit): the
    repeat count of each position, oldest first. Only for the self-test against the definition."""
    n = len(window)
    rat = lambda i: window[n - 1 - i]
    count = [0] * n
    last = n - 1
    rt = lt = 0
    for k in range(1, n):
        if k > rt:
            m = 0
            while m + k < n and rat(m) == rat(m + k):
                m += 1
            count[last - k] = min(m, rep_limit)
            if m > 0:
                lt, rt = k, k + m - 1
        else:
            p = k - lt
            right = rt - k + 1
            if count[last - p] < right:
                count[last - k] = min(count[last - p], rep_limit)
            else:
                i = rt + 1
                while i < n and rat(i) == rat(i - k):
                    i += 1
                count[last - k] = min(i - k, rep_limit)
                lt, rt = k, i - 1
    return count


def dry_penalty(length, multiplier, base, allowed):
    if length < allowed:
        return 0.0
    exp = length - allowed
    if base > 1.000001:
        # float / float in llama.cpp: FLOAT_MAX_LOG / std::log(dry_base), truncated to int
        max_exp = int(numpy.float32(DRY_FLOAT_MAX_LOG) / numpy.log(numpy.float32(base)))
        if max_exp > 0 and exp > max_exp:
            exp = max_exp
    return multiplier * base ** exp


def apply_dry(z, context, multiplier, base, allowed, last_n, breakers, n_ctx):
    """llama.cpp llama_sampler_dry_apply (src/llama-sampler.cpp, commit
    00efb3e184262872916bf136b3df63c1822a19bd). `context` is prompt + output; `breakers` the
    [head, tail...] sequences; n_ctx the model's context (last_n = -1 means that many)."""
    out = z.clone()
    if multiplier == 0 or base < 1 or last_n == 0:
        return out, INF
    window = dry_window(context, last_n, n_ctx)
    if len(window) <= allowed:
        return out, INF
    rep_limit = dry_rep_limit(window, breakers)
    if rep_limit < allowed:
        return out, INF
    single = {seq[0] for seq in breakers if len(seq) == 1}
    for t, length in dry_repeat_lengths(window, rep_limit).items():
        if length >= allowed and t not in single and float(out[t]) != NEG_INF:
            out[t] = float(out[t]) - dry_penalty(length, multiplier, base, allowed)
    return out, INF

# ----------------------------------------------------------------------------- adaptive


def mirostat_v2_step(z, tau, eta, mu, coin):
    """llama.cpp llama_sampler_mirostat_v2_apply (src/llama-sampler.cpp, commit
    00efb3e184262872916bf136b3df63c1822a19bd). Returns (token, new mu, margins)."""
    probs = sampling.softmax(z)
    p = probs.tolist()
    order = sampling.candidate_order(probs)
    kept = []
    for i in order:
        if -math.log2(p[i]) > mu:
            break
        kept.append(i)
    if not kept:
        kept = order[:1]
    trunc = min(abs(math.log(p[i]) + mu * LN2) for i in order)
    zk = keep_only(z, kept)
    q = sampling.softmax(zk)
    tok = sampling.sample_inverse_cdf(q, coin)
    new_mu = mu - eta * (-math.log2(float(q[tok])) - tau)
    margins = [("mirostat surprise vs mu", trunc), ("coin", sampling.cdf_margin(q, coin)),
               ("rank", sampling.rank_margin(zk, q, tok))]
    return tok, new_mu, margins


def mirostat_v1_k(probs, mu, m, n_vocab):
    """s_hat from the top m probabilities and the k it gives (a float), as llama.cpp computes."""
    order = sampling.candidate_order(probs)
    p = probs.tolist()
    num = den = 0.0
    for i in range(min(m - 1, len(order) - 1)):
        t = math.log((i + 2) / (i + 1))
        b = math.log(p[order[i]] / p[order[i + 1]])
        num += t * b
        den += t * t
    if den == 0:
        raise ValueError("mirostat: one candidate left, s_hat is undefined (llama.cpp divides by zero)")
    s_hat = num / den
    eps = s_hat - 1
    return (eps * 2.0 ** mu / (1 - n_vocab ** (-eps))) ** (1 / s_hat)


def mirostat_v1_step(z, tau, eta, m, mu, coin, n_vocab):
    """llama.cpp llama_sampler_mirostat_apply (src/llama-sampler.cpp, commit
    00efb3e184262872916bf136b3df63c1822a19bd). Returns (token, new mu, margins)."""
    probs = sampling.softmax(z)
    order = sampling.candidate_order(probs)
    k = mirostat_v1_k(probs, mu, m, n_vocab)
    kk = min(max(int(k), 1), len(order))
    # max(int(k), 1) changes at the integers >= 2 only
    dist = 2 - k if k < 2 else min(k - math.floor(k), math.floor(k) + 1 - k)
    kmargin = dist / max(k, 1.0) / 10
    kept = order[:kk]
    zk = keep_only(z, kept)
    q = sampling.softmax(zk)
    tok = sampling.sample_inverse_cdf(q, coin)
    new_mu = mu - eta * (-math.log2(float(q[tok])) - tau)
    margins = [("mirostat k", kmargin), ("mirostat cut", sampling.cut_gap(z, order, kk)),
               ("coin", sampling.cdf_margin(q, coin)), ("rank", sampling.rank_margin(zk, q, tok))]
    return tok, new_mu, margins


def apply_dynamic_temperature(z, temperature, rng_, exponent):
    """llama.cpp llama_sampler_temp_ext_apply (src/llama-sampler.cpp, commit
    00efb3e184262872916bf136b3df63c1822a19bd). rng_ = dynatemp_range."""
    if rng_ <= 0:
        return sampling.apply_temperature(z, temperature)
    cand = candidates(z)
    if len(cand) <= 1:
        return z.clone(), INF
    t_min = max(0.0, temperature - rng_)
    t_max = temperature + rng_
    H = entropy_of(sampling.softmax(z))
    t = t_min + (t_max - t_min) * (H / math.log(len(cand))) ** exponent
    if t <= 0:
        top = sampling.argmax_lowest(z)
        return keep_only(z, [top]), INF
    return z / t, INF

def keep_largest(z):
    """llama.cpp llama_sampler_temp_impl with temp <= 0: only the largest logit stays (the lowest id
    among equals); the margin is its gap to the runner-up."""
    return keep_only(z, [sampling.argmax_lowest(z)]), sampling.top2_gap(z)

# ----------------------------------------------------------------------------- biases


def apply_logit_bias(z, bias):
    out = z.clone()
    for t, b in bias:
        out[t] = float(out[t]) + b
    return out, INF


def apply_sequence_bias(z, sequence, bias):
    """HF SequenceBiasLogitsProcessor (logits_process.py, commit 00857b6cf63a4fa05cbd9bdc8a4fd78b6168c5af).
    `bias` is a list of (ids, bias); HF keeps it as a dict, so a repeated sequence keeps its last bias."""
    d = {}
    for ids, b in bias:
        d[tuple(ids)] = b
    sequence = list(sequence)
    out = z.clone()
    add = torch.zeros_like(z)
    for ids, b in d.items():
        if len(ids) == 1:
            add[ids[0]] = b  # length_1_bias[ids] = bias (assignment)
    for ids, b in d.items():
        if len(ids) == 1 or len(ids) > len(sequence):
            continue
        if sequence[len(sequence) - (len(ids) - 1):] == list(ids[:-1]):
            add[ids[-1]] = float(add[ids[-1]]) + b
    return out + add, INF


def apply_bad_words(z, sequence, bad_words, eos_ids, rule="hf"):
    """hf: NoBadWordsLogitsProcessor (entries equal to [eos] dropped; `sequence` = prompt + output).
    vllm: vllm-project/vllm vllm/v1/sample/ops/bad_words.py (commit 17daac6129911695e8ccda9dd1f60c50aa08a096)
    _apply_bad_words_single_batch (`sequence` = the output; nothing dropped)."""
    sequence = list(sequence)
    out = z.clone()
    for word in bad_words:
        word = list(word)
        if rule == "hf" and any(word == [e] for e in eos_ids):
            continue
        if len(word) > len(sequence) + 1:
            continue
        prefix = word[:-1]
        if not prefix or sequence[len(sequence) - len(prefix):] == prefix:
            out[word[-1]] = NEG_INF
    return out, INF


def apply_suppress(z, ids):
    out = z.clone()
    for t in ids:
        out[t] = NEG_INF
    return out, INF

# ----------------------------------------------------------------------------- the chain


def full_knobs(knobs):
    unknown = sorted(set(knobs) - set(KNOB_DEFAULTS))
    if unknown:
        raise ValueError("unknown knob(s) %s" % ", ".join(unknown))
    k = dict(KNOB_DEFAULTS)
    k.update(knobs)
    for name in INT_KNOBS:
        k[name] = int(k[name])
    for name, v in KNOB_DEFAULTS.items():
        if isinstance(v, float):
            k[name] = float(k[name])
    return k


def ids_text(ids):
    """"464 3290": a token sequence in a processor's name."""
    return " ".join("%d" % t for t in ids)


def bias_text(b):
    return "-inf" if b == NEG_INF else g(b)


class Chain10:
    """The processors a knob dict asks for, in an engine's order. `n_vocab` and `n_ctx` come from
    the model, `eos_ids` are the ids min_new_tokens masks and bad words may not ban alone, and
    `breakers` the DRY sequences bound to the tokenizer (dry_breaker_sequences)."""

    def __init__(self, knobs, order, n_vocab, n_ctx, eos_ids, breakers=None):
        self.knobs = k = full_knobs(knobs)
        self.order = sampling.parse_order(order)
        self.n_vocab, self.n_ctx, self.eos_ids = n_vocab, n_ctx, list(eos_ids)
        whole_chain = k["do_sample"] and self.order == "llama.cpp"
        self.greedy = (not k["do_sample"]) or (k["temperature"] == 0 and not (whole_chain and k["dynatemp_range"] > 0))
        self.warpers = whole_chain or not self.greedy
        self.mirostat = k["mirostat"] if self.order == "llama.cpp" and not self.greedy else 0
        if k["dry_multiplier"] != 0 and k["dry_sequence_breakers"] and breakers is None:
            raise ValueError("DRY with sequence breakers needs them bound to the tokenizer")
        self.breakers = breakers or []
        mk = k["min_tokens_to_keep"]
        o = self.order
        st = {}  # stage -> (name, fn(z, prompt, generated, seed) -> (z, margin)) or None when off
        st["logit_bias"] = ("logit_bias(%s)" % ", ".join("%d:%s" % (t, bias_text(b)) for t, b in k["logit_bias"]),
                            lambda z, pr, ge, s: apply_logit_bias(z, k["logit_bias"])) if k["logit_bias"] else None
        # hf: a logit_bias entry is HF's sequence_bias of one token, in the same processor (and dict)
        seq = [([t], b) for t, b in (k["logit_bias"] if o == "hf" else [])] + \
            [(list(ids), b) for ids, b in k["sequence_bias"]]
        st["sequence_bias"] = ("sequence_bias(%s)" % ", ".join("%s:%s" % (ids_text(ids), bias_text(b)) for ids, b in seq),
                               lambda z, pr, ge, s: apply_sequence_bias(z, list(pr) + list(ge), seq)) if seq else None
        st["min_new_tokens"] = ("min_new_tokens(%d)" % k["min_new_tokens"],
                                lambda z, pr, ge, s: self._min_new(z, ge)) if k["min_new_tokens"] > 0 else None
        if k["repetition_penalty"] != 1:
            scope = {"prompt_and_output": "", "output_only": ", output_only",
                     "last_n": ", last_n=%d" % k["penalty_last_n"]}[k["penalty_scope"]]
            st["repetition"] = ("repetition_penalty(%s%s)" % (g(k["repetition_penalty"]), scope),
                                lambda z, pr, ge, s: sampling.apply_repetition_penalty(
                                    z, sampling.penalty_window(pr, ge, k["penalty_scope"], k["penalty_last_n"]),
                                    k["repetition_penalty"]))
        else:
            st["repetition"] = None
        st["presence_frequency"] = ("presence_frequency(%s, %s)" % (g(k["presence_penalty"]), g(k["frequency_penalty"])),
                                    lambda z, pr, ge, s: sampling.apply_presence_frequency(
                                        z, ge, k["presence_penalty"], k["frequency_penalty"])
                                    ) if (k["presence_penalty"] != 0 or k["frequency_penalty"] != 0) else None
        st["no_repeat_ngram"] = ("no_repeat_ngram(%d)" % k["no_repeat_ngram_size"],
                                 lambda z, pr, ge, s: sampling.apply_no_repeat_ngram(
                                     z, list(pr) + list(ge), k["no_repeat_ngram_size"])
                                 ) if k["no_repeat_ngram_size"] > 0 else None
        bad_rule = "vllm" if o == "vllm" else "hf"
        st["bad_words"] = ("bad_words(%s)" % ", ".join(ids_text(w) for w in k["bad_words_ids"]),
                           lambda z, pr, ge, s: apply_bad_words(
                               z, list(ge) if bad_rule == "vllm" else list(pr) + list(ge), k["bad_words_ids"],
                               self.eos_ids, bad_rule)) if k["bad_words_ids"] else None
        st["suppress"] = ("suppress_tokens(%s)" % ids_text(k["suppress_tokens"]),
                          lambda z, pr, ge, s: apply_suppress(z, k["suppress_tokens"])) if k["suppress_tokens"] else None
        st["begin_suppress"] = ("begin_suppress_tokens(%s)" % ids_text(k["begin_suppress_tokens"]),
                                lambda z, pr, ge, s: apply_suppress(z, k["begin_suppress_tokens"]) if len(ge) == 0
                                else (z.clone(), INF)) if k["begin_suppress_tokens"] else None
        dry_on = k["dry_multiplier"] != 0 and k["dry_base"] >= 1 and k["dry_penalty_last_n"] != 0
        st["dry"] = ("dry(%s, %s, %d, %d)" % (g(k["dry_multiplier"]), g(k["dry_base"]), k["dry_allowed_length"],
                                              k["dry_penalty_last_n"]),
                     lambda z, pr, ge, s: apply_dry(z, list(pr) + list(ge), k["dry_multiplier"], k["dry_base"],
                                                    k["dry_allowed_length"], k["dry_penalty_last_n"], self.breakers,
                                                    self.n_ctx)) if dry_on else None
        if k["dynatemp_range"] > 0 and o == "llama.cpp":
            st["temperature"] = ("dynatemp(%s, %s, %s)" % (g(k["temperature"]), g(k["dynatemp_range"]),
                                                           g(k["dynatemp_exponent"])),
                                 lambda z, pr, ge, s: apply_dynamic_temperature(
                                     z, k["temperature"], k["dynatemp_range"], k["dynatemp_exponent"]))
        else:
            st["temperature"] = ("temperature(%s)" % g(k["temperature"]),
                                 lambda z, pr, ge, s: keep_largest(z) if k["temperature"] == 0
                                 else sampling.apply_temperature(z, k["temperature"])
                                 ) if k["temperature"] != 1 else None
        st["top_k"] = ("top_k(%d)" % k["top_k"],
                       lambda z, pr, ge, s: sampling.apply_top_k(z, k["top_k"], mk)) if k["top_k"] > 0 else None
        st["top_p"] = ("top_p(%s)" % g(k["top_p"]),
                       lambda z, pr, ge, s: sampling.apply_top_p(z, k["top_p"], mk, sampling.TOP_P_RULES[o])
                       ) if k["top_p"] < 1 else None
        st["min_p"] = ("min_p(%s)" % g(k["min_p"]),
                       lambda z, pr, ge, s: sampling.apply_min_p(z, k["min_p"], mk)) if k["min_p"] > 0 else None
        st["typical_p"] = ("typical_p(%s)" % g(k["typical_p"]),
                           lambda z, pr, ge, s: apply_typical_p(z, k["typical_p"], mk,
                                                                "llama.cpp" if o == "llama.cpp" else "hf")
                           ) if k["typical_p"] < 1 else None
        st["epsilon"] = ("epsilon_cutoff(%s)" % g(k["epsilon_cutoff"]),
                         lambda z, pr, ge, s: apply_epsilon_cutoff(z, k["epsilon_cutoff"], mk)
                         ) if k["epsilon_cutoff"] > 0 else None
        st["eta"] = ("eta_cutoff(%s)" % g(k["eta_cutoff"]),
                     lambda z, pr, ge, s: apply_eta_cutoff(z, k["eta_cutoff"], mk)) if k["eta_cutoff"] > 0 else None
        st["top_n_sigma"] = ("top_n_sigma(%s)" % g(k["top_n_sigma"]),
                             lambda z, pr, ge, s: apply_top_n_sigma(z, k["top_n_sigma"])) if k["top_n_sigma"] > 0 else None
        xtc_on = k["xtc_probability"] > 0 and k["xtc_threshold"] <= 0.5
        st["xtc"] = ("xtc(%s, %s)" % (g(k["xtc_probability"]), g(k["xtc_threshold"])),
                     lambda z, pr, ge, s: apply_xtc(z, k["xtc_probability"], k["xtc_threshold"], mk,
                                                    xtc_coin(s, len(ge)))) if xtc_on else None
        if o == "hf":  # huggingface/transformers generation/utils.py _get_logits_processor's order
            st["logit_bias"] = None  # folded into sequence_bias above
            before = ["sequence_bias", "repetition", "presence_frequency", "no_repeat_ngram", "bad_words",
                      "min_new_tokens", "suppress", "begin_suppress"]
            after = ["temperature", "top_k", "top_p", "min_p", "typical_p", "epsilon", "eta"]
        elif o == "llama.cpp" and self.mirostat:
            before = ["logit_bias", "min_new_tokens"]
            after = ["temperature"]
        elif o == "llama.cpp":
            before = ["logit_bias", "min_new_tokens", "repetition", "presence_frequency", "no_repeat_ngram", "dry"]
            after = ["top_n_sigma", "top_k", "typical_p", "top_p", "min_p", "xtc", "temperature"]
        else:
            before = ["bad_words", "min_new_tokens", "logit_bias", "repetition", "presence_frequency",
                      "no_repeat_ngram"]
            after = ["temperature", "min_p", "top_k", "top_p"]
        self.refused = sorted(s for s in st if st[s] is not None and s not in before + after)
        if self.refused:
            raise ValueError("order %s has no stage for %s" % (o, ", ".join(self.refused)))
        stages = before + (after if self.warpers else [])
        self.processors = [st[s] for s in stages if st[s] is not None]
        self.mu0 = 2 * k["mirostat_tau"]

    def _min_new(self, z, generated):
        out = z.clone()
        if len(generated) < self.knobs["min_new_tokens"]:
            for e in self.eos_ids:
                out[e] = NEG_INF
        return out, INF

    def end_name(self):
        k = self.knobs
        if self.mirostat:
            return "mirostat%s(tau=%s, eta=%s)" % ("_v2" if self.mirostat == 2 else "", g(k["mirostat_tau"]),
                                                   g(k["mirostat_eta"]))
        return "argmax" if self.greedy else "sample"

    def describe(self):
        return " -> ".join([n for n, _ in self.processors] + [self.end_name()])

    def apply(self, logits, prompt, generated, seed):
        """(processed logits, [(processor name, margin)])."""
        z = logits.to(torch.float64).clone()
        margins = []
        for name, fn in self.processors:
            z, m = fn(z, prompt, generated, seed)
            margins.append((name, m))
            if not candidates(z):
                raise ValueError("no token is left after %s" % name)
        return z, margins

    def pick(self, logits, prompt, generated, seed, coin, mu):
        """(token, new mu, min margin of the step, the check that gave it)."""
        z, margins = self.apply(logits, prompt, generated, seed)
        k = self.knobs
        if self.mirostat == 2:
            tok, mu, ms = mirostat_v2_step(z, k["mirostat_tau"], k["mirostat_eta"], mu, coin)
            margins += ms
        elif self.mirostat == 1:
            tok, mu, ms = mirostat_v1_step(z, k["mirostat_tau"], k["mirostat_eta"], MIROSTAT_M, mu, coin,
                                           self.n_vocab)
            margins += ms
        elif self.greedy:
            tok = sampling.argmax_lowest(z)
            margins.append(("argmax top-2 gap", sampling.top2_gap(z)))
        else:
            probs = sampling.softmax(z)
            tok = sampling.sample_inverse_cdf(probs, coin)
            margins.append(("coin", sampling.cdf_margin(probs, coin)))
            margins.append(("rank", sampling.rank_margin(z, probs, tok)))
        name, m = min(margins, key=lambda nm: nm[1])
        return tok, mu, m, name


def generate(model, prompt_ids, knobs, order, seed, max_new_tokens, eos_ids, breakers=None, stop_below=None):
    """The naive loop on the reference model: step i takes coin i of Rng(seed) (one per step, used or
    not; mirostat draws with it too), XTC its own xtc_coin(seed, i); mu starts at 2 tau. Stops after
    max_new_tokens or right after an EOS id (kept). stop_below: give up at the first step whose margin
    is below it (result["aborted"])."""
    prompt_ids = list(prompt_ids)
    chain = Chain10(knobs, order, model.vocab_size, model.n_positions, eos_ids, breakers)
    r = rng.Rng(seed)
    mu = chain.mu0
    out, margins, limits, mus = [], [], [], []
    stopped = aborted = False
    for _ in range(max_new_tokens):
        coin = r.coin()
        logits = gpt2.forward(model, prompt_ids + out)[-1]
        tok, mu, m, why = chain.pick(logits, prompt_ids, out, seed, coin, mu)
        margins.append(m)
        limits.append(why)
        mus.append(mu)
        out.append(tok)
        if stop_below is not None and m < stop_below:
            aborted = True
            break
        if tok in eos_ids:
            stopped = True
            break
    return {"ids": out, "stopped_by_eos": stopped, "margins": margins, "limits": limits, "mus": mus,
            "aborted": aborted, "chain": chain.describe()}

# ----------------------------------------------------------------------------- self-test


def _t(xs):
    return torch.tensor(xs, dtype=torch.float64)


def _probs_after(z):
    return sampling.softmax(z).tolist()


def _close(a, b, tol=1e-6):
    return all(abs(x - y) <= tol for x, y in zip(a, b)) and len(a) == len(b)


def selftest_engines():
    """Every engine case with numbers (next-chapters.md section 3), as facts."""
    log = lambda xs: torch.log(_t(xs))
    # huggingface/transformers tests/generation/test_logits_process.py test_typical_dist_warper:
    # log [0.97, 0.01, 0.01, 0.01] at mass 0.5 keeps only 0.97; log [0.4, 0.2, 0.2, 0.2] drops the 0.4
    assert candidates(apply_typical_p(log([0.97, 0.01, 0.01, 0.01]), 0.5)[0]) == [0]
    assert candidates(apply_typical_p(log([0.4, 0.2, 0.2, 0.2]), 0.5)[0]) == [1, 2, 3]
    # ... a uniform row of 5 with min_tokens_to_keep 3 loses nothing (every score is 0: all tie)
    assert candidates(apply_typical_p(log([0.2] * 5), 0.5, min_keep=3)[0]) == [0, 1, 2, 3, 4]
    # ... ramp logits (arange(10) - 5, row 2 times 100), mass 0.7, min_tokens_to_keep 2: 2 kept in each row
    ramp = torch.arange(10, dtype=torch.float64) - 5
    for row in (ramp, ramp * 100):
        assert len(candidates(apply_typical_p(row, 0.7, min_keep=2)[0])) == 2
    # ggml-org/llama.cpp tests/test-sampling.cpp test_typical: {0.97, 0.01, 0.01, 0.01}, p 0.5 -> {0.97};
    # {0.4, 0.2, 0.2, 0.2} -> {0.2, 0.2, 0.2}
    assert candidates(apply_typical_p(log([0.97, 0.01, 0.01, 0.01]), 0.5, rule="llama.cpp")[0]) == [0]
    assert candidates(apply_typical_p(log([0.4, 0.2, 0.2, 0.2]), 0.5, rule="llama.cpp")[0]) == [1, 2, 3]
    # HF test_epsilon_dist_warper: [0.87, 0.099, 0.001, 0.03] at 0.1 -> only 0.87;
    # [0.4, 0.299, 0.101, 0.2] unchanged; ramp, eps 5e-2, min_keep 2 -> 3 and 2 kept
    assert candidates(apply_epsilon_cutoff(log([0.87, 0.099, 0.001, 0.03]), 0.1)[0]) == [0]
    assert candidates(apply_epsilon_cutoff(log([0.4, 0.299, 0.101, 0.2]), 0.1)[0]) == [0, 1, 2, 3]
    assert [len(candidates(apply_epsilon_cutoff(r, 5e-2, min_keep=2)[0])) for r in (ramp, ramp * 100)] == [3, 2]
    # HF test_eta_dist_warper, eps 0.0625: [0, 0.1, 0.8, 0.1] unchanged (eta = min(0.0625, 0.1320));
    # [0.01, 0.04, 0.9, 0.05] -> only 0.9 (eta = min(0.0625, 0.1644)); ramp, eps 0.1, min_keep 2 -> 2, 2
    z = _t([NEG_INF, math.log(0.1), math.log(0.8), math.log(0.1)])  # torch.log(0) = -inf in HF's test
    assert candidates(apply_eta_cutoff(z, 0.0625)[0]) == [1, 2, 3]
    assert abs(math.sqrt(0.0625) * math.exp(-entropy_of(sampling.softmax(z))) - 0.1320) < 1e-4
    assert candidates(apply_eta_cutoff(log([0.01, 0.04, 0.9, 0.05]), 0.0625)[0]) == [2]
    assert [len(candidates(apply_eta_cutoff(r, 0.1, min_keep=2)[0])) for r in (ramp, ramp * 100)] == [2, 2]
    # HF test_bias_dist_processor: V 5, input rows [0, 1, 3, 1] and [0, 1, 0, 1], sequence_bias
    # {(1,): 100, (4,): 100, (1, 0): -100, (0, 1, 2): -100, (1, 3, 1, 3): -100, (1, 3, 1, 3, 1, 3): -100}
    # on zeros -> [[-100, 100, 0, -100, 100], [-100, 100, -100, 0, 100]]
    sb = [([1], 100.0), ([4], 100.0), ([1, 0], -100.0), ([0, 1, 2], -100.0), ([1, 3, 1, 3], -100.0),
          ([1, 3, 1, 3, 1, 3], -100.0)]
    for row, want in (([0, 1, 3, 1], [-100, 100, 0, -100, 100]), ([0, 1, 0, 1], [-100, 100, -100, 0, 100])):
        assert apply_sequence_bias(torch.zeros(5, dtype=torch.float64), row, sb)[0].tolist() == want
    # HF test_no_bad_words_dist_processor: V 5, EOS 4, bad [[1], [4], [1, 0], [0, 1, 2], [1, 3, 1, 3]]
    # -> isinf [[T, T, F, T, F], [T, T, T, F, F]] ([4] alone is EOS: ignored); [[4]] alone changes nothing
    bad = [[1], [4], [1, 0], [0, 1, 2], [1, 3, 1, 3]]
    for row, want in (([0, 1, 3, 1], [True, True, False, True, False]), ([0, 1, 0, 1], [True, True, True, False, False])):
        got = apply_bad_words(torch.zeros(5, dtype=torch.float64), row, bad, [4])[0]
        assert torch.isinf(got).tolist() == want, (row, got)
        assert not torch.isinf(apply_bad_words(torch.zeros(5, dtype=torch.float64), row, [[4]], [4])[0]).any()
    # HF test_suppress_tokens_logits_processor / ..._at_begin: [1, 3, 5] -inf, the rest finite; begin
    # suppression only at the first generated position
    zs = apply_suppress(torch.zeros(8, dtype=torch.float64), [1, 3, 5])[0]
    assert torch.isinf(zs).tolist() == [False, True, False, True, False, True, False, False]
    ch = Chain10({"begin_suppress_tokens": [1, 2, 3]}, "hf", 8, 16, [7])
    assert Chain10({"logit_bias": [[3, 2.0]], "sequence_bias": [[[1, 3], -1.0]]}, "hf", 8, 16, [7]).describe() == \
        "sequence_bias(3:2, 1 3:-1) -> argmax"
    assert candidates(ch.apply(torch.zeros(8), [0, 0, 0, 0, 0], [], 0)[0]) == [0, 4, 5, 6, 7]
    assert candidates(ch.apply(torch.zeros(8), [0, 0, 0, 0], [5], 0)[0]) == list(range(8))
    # llama.cpp test_xtc (probability 0.99, probs {0.4, 0.3, 0.2, 0.1}; the engine's coin fell below
    # 0.99, ours is given): threshold 0.09 -> {0.1}; 0.19 -> {0.2, 0.1}; 0.29 -> {0.3, 0.2, 0.1};
    # 0.39 -> unchanged (only one above)
    zx = log([0.4, 0.3, 0.2, 0.1])
    for thr, want in ((0.09, [3]), (0.19, [2, 3]), (0.29, [1, 2, 3]), (0.39, [0, 1, 2, 3])):
        assert candidates(apply_xtc(zx, 0.99, thr, 1, 0.5)[0]) == want, thr
    assert candidates(apply_xtc(zx, 0.99, 0.09, 1, 0.995)[0]) == [0, 1, 2, 3]  # coin above: no XTC
    # llama.cpp test_top_n_sigma: logits log {0.1, 0.2, 0.3, 0.4}, n 1 -> 0.3 and 0.4 renormalised
    # (0.428571, 0.571429); n 0 and n 3 keep all
    zt = log([0.1, 0.2, 0.3, 0.4])
    kept = apply_top_n_sigma(zt, 1)[0]
    assert candidates(kept) == [2, 3] and _close([_probs_after(kept)[i] for i in (2, 3)], [0.428571, 0.571429])
    assert candidates(apply_top_n_sigma(zt, 0)[0]) == [0, 1, 2, 3]
    assert candidates(apply_top_n_sigma(zt, 3)[0]) == [0, 1, 2, 3]
    # llama.cpp test_dry (probs, last tokens, expected probs, multiplier, base, allowed, last_n, breakers),
    # context size 1024 (llama_sampler_init_dry_testing)
    dry_cases = [
        ([0.25] * 4, [0, 1], [0.25] * 4, 1.0, 1.1, 2, 4, []),
        ([0.25] * 4, [0, 1, 2, 0, 1], [0.296923, 0.296923, 0.109232, 0.296923], 1.0, 1.1, 2, 5, []),
        ([0.2] * 5, [0, 1, 3, 4, 0, 1], [0.2] * 5, 1.0, 1.1, 2, 6, [[3]]),
        ([0.2] * 5, [0, 1, 2, 0, 1], [0.241818, 0.241818, 0.032727, 0.241818, 0.241818], 2.0, 1.1, 2, 5, []),
        ([0.2] * 5, [0, 1, 2, 3, 4, 0, 1], [0.2] * 5, 1.0, 1.1, 4, 7, []),
    ]
    for probs, ctx, want, mult, base, allowed, last_n, brk in dry_cases:
        zd = apply_dry(log(probs), ctx, mult, base, allowed, last_n, brk, 1024)[0]
        assert _close(_probs_after(zd), want), (ctx, _probs_after(zd), want)


def selftest_dry():
    """The definition against llama.cpp's Z-algorithm, and the breakers' rules on a toy vocabulary."""
    r = rng.Rng(11)
    for trial in range(400):
        n = 1 + int(r.coin() * 30)
        w = [int(r.coin() * 3) for _ in range(n)]
        limit = int(r.coin() * (n + 1))
        counts = dry_z_algorithm(w, limit)
        naive = []
        for j in range(n):
            k = 0
            while k <= j and j != n - 1 and w[j - k] == w[n - 1 - k]:
                k += 1
            naive.append(min(k, limit) if j != n - 1 else 0)
        assert counts == naive, (w, limit, counts, naive)
    # "a b X a b" with X a breaker: the repeat may use the two tokens after X; the candidate X
    # itself would repeat "a b" (L = 2) whether or not the limit applies
    w = [0, 1, 9, 0, 1]
    assert dry_rep_limit(w, [[9]]) == 2
    assert dry_repeat_lengths(w, 2)[9] == 2 and dry_repeat_lengths(w, 5)[9] == 2
    # a multi-token breaker [7, 8]: its head 7 counts only when 8 follows it
    assert dry_rep_limit([1, 7, 8, 1, 2], [[7, 8]]) == 2
    assert dry_rep_limit([1, 7, 1, 2], [[7, 8]]) == 4
    # the exponent clamp: float(88.7228391) / logf(2) rounds to 128.0f in float, so 128 (127 in double)
    assert dry_penalty(2 + 500, 1.0, 2.0, 2) == 2.0 ** 128
    assert dry_penalty(1, 1.0, 2.0, 2) == 0.0


class _ToyTok:
    """Just enough of bpe.Tokenizer for dry_breaker_sequences: id -> bytes, bytes -> one id per byte."""

    def __init__(self, words):
        self.words = [w.encode() for w in words]
        self.id_to_token = {i: w for i, w in enumerate(words)}

    def decode(self, ids):
        return b"".join(self.words[i] for i in ids)

    def _encode_ordinary(self, data):
        return [self.words.index(bytes([b])) for b in data]


def selftest_breakers():
    # llama.cpp's rule: "ab:" contains ":" (no tail); for the breaker "xyz", "ax" ends with "x" -> tail
    # tokenize("yz"); "axy" ends with "xy" -> tail tokenize("z"); "xyz!" contains it
    tok = _ToyTok(["x", "y", "z", ":", "ab:", "ax", "axy", "xyz!", "q"])
    got = dry_breaker_sequences(tok, [":", "xyz"])
    assert got == [[0, 1, 2], [3], [4], [5, 1, 2], [6, 2], [7]], got


def selftest_mirostat():
    # v2 by hand: p = [0.5, 0.25, 0.125, 0.125] (surprises 1, 2, 3, 3 bits), mu = 2.5: the first two
    # survive, renormalised to [2/3, 1/3]; coin 0.7 falls past 2/3 -> token 1, surprise log2 3 =
    # 1.58496 bits; tau 2, eta 0.1: mu = 2.5 - 0.1 (1.58496 - 2) = 2.541504
    z = torch.log(_t([0.5, 0.25, 0.125, 0.125]))
    tok, mu, _ = mirostat_v2_step(z, 2.0, 0.1, 2.5, 0.7)
    assert tok == 1 and abs(mu - (2.5 - 0.1 * (math.log2(3) - 2))) < 1e-12
    # coin 0.6 < 2/3 -> token 0, surprise log2 1.5 = 0.58496: mu = 2.5 + 0.1 (2 - 0.58496) = 2.641504
    tok, mu, _ = mirostat_v2_step(z, 2.0, 0.1, 2.5, 0.6)
    assert tok == 0 and abs(mu - 2.641504) < 1e-6
    # mu below every surprise keeps only the most likely: surprise 0 after renormalising
    tok, mu, _ = mirostat_v2_step(z, 2.0, 0.1, 0.5, 0.99)
    assert tok == 0 and abs(mu - (0.5 + 0.2)) < 1e-12
    # v1 by hand: a Zipf distribution p_i ~ 1/(i+1) (s = 1.0 exactly gives eps = 0: take s = 2,
    # p_i ~ 1/(i+1)^2 over V = 8): b_i = 2 t_i, so s_hat = 2, eps = 1, k = (2^mu / (1 - 1/8))^(1/2);
    # mu = 3: k = sqrt(8 / 0.875) = 3.0237 -> top 3
    pz = [1 / (i + 1) ** 2 for i in range(8)]
    zz = torch.log(_t(pz))
    k = mirostat_v1_k(sampling.softmax(zz), 3.0, 100, 8)
    assert abs(k - math.sqrt(8 / 0.875)) < 1e-9
    # top 3 renormalised: [1, 1/4, 1/9] / (49/36) = [36/49, 9/49, 4/49]; coin 0.9 is past 45/49 = 0.918? no:
    # 36/49 = 0.7347, 45/49 = 0.9184 -> coin 0.9 picks token 1, surprise log2(49/9) = 2.4448
    tok, mu, _ = mirostat_v1_step(zz, 3.0, 0.1, 100, 3.0, 0.9, 8)
    assert tok == 1 and abs(mu - (3.0 - 0.1 * (math.log2(49 / 9) - 3.0))) < 1e-9
    # mu held near tau: a long run on a fixed Zipf-like distribution keeps the mean surprise near tau
    V = 500
    zl = torch.log(_t([1 / (i + 1) ** 1.1 for i in range(V)]))
    r = rng.Rng(5)
    mu, surprises = 2 * 3.0, []
    for _ in range(3000):
        tok, new_mu, _ = mirostat_v2_step(zl, 3.0, 0.1, mu, r.coin())
        surprises.append((mu - new_mu) / -0.1 + 3.0)
        mu = new_mu
    mean = sum(surprises[500:]) / len(surprises[500:])
    assert abs(mean - 3.0) < 0.1, mean


def selftest_dynatemp():
    # by hand: logits [0, 0] (uniform over 2: H / ln 2 = 1) with T 1, range 0.5 -> T_max = 1.5;
    # logits [ln 3, 0]: p = [0.75, 0.25], H = 0.562335, H / ln 2 = 0.811278; exponent 1:
    # T = 0.5 + 1.0 * 0.811278 = 1.311278, and z / T
    z, _ = apply_dynamic_temperature(_t([0.0, 0.0]), 1.0, 0.5, 1.0)
    assert z.tolist() == [0.0, 0.0]
    z, _ = apply_dynamic_temperature(_t([math.log(3), 0.0]), 1.0, 0.5, 1.0)
    H = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    T = 0.5 + 1.0 * H / math.log(2)
    assert abs(H - 0.562335) < 1e-6 and abs(float(z[0]) - math.log(3) / T) < 1e-12
    # exponent 2: T = 0.5 + 0.811278^2 = 1.158172
    z, _ = apply_dynamic_temperature(_t([math.log(3), 0.0, NEG_INF]), 1.0, 0.5, 2.0)
    assert abs(float(z[0]) - math.log(3) / (0.5 + (H / math.log(2)) ** 2)) < 1e-12  # n = 2 candidates
    # range 0 is plain temperature; one candidate is left alone
    assert apply_dynamic_temperature(_t([2.0, 1.0]), 0.5, 0.0, 1.0)[0].tolist() == [4.0, 2.0]
    assert apply_dynamic_temperature(_t([2.0, NEG_INF]), 0.5, 0.3, 1.0)[0].tolist() == [2.0, NEG_INF]


def selftest_chain():
    full = {"do_sample": True, "temperature": 0.8, "top_k": 40, "top_p": 0.95, "min_p": 0.05,
            "repetition_penalty": 1.1, "typical_p": 0.9, "top_n_sigma": 1.5, "xtc_probability": 0.5,
            "xtc_threshold": 0.1, "dry_multiplier": 0.8, "logit_bias": [[5, -1.0]]}
    c = Chain10(full, "llama.cpp", 10, 16, [9], breakers=[[3]])
    assert c.describe() == ("logit_bias(5:-1) -> repetition_penalty(1.1) -> dry(0.8, 1.75, 2, -1) -> top_n_sigma(1.5) "
                            "-> top_k(40) -> typical_p(0.9) -> top_p(0.95) -> min_p(0.05) -> xtc(0.5, 0.1) "
                            "-> temperature(0.8) -> sample"), c.describe()
    hf = {"do_sample": True, "temperature": 0.8, "typical_p": 0.9, "eta_cutoff": 0.002, "epsilon_cutoff": 3e-4,
          "sequence_bias": [[[1, 2], -5.0]], "bad_words_ids": [[4]], "suppress_tokens": [6]}
    assert Chain10(hf, "hf", 10, 16, [9]).describe() == (
        "sequence_bias(1 2:-5) -> bad_words(4) -> suppress_tokens(6) -> temperature(0.8) -> typical_p(0.9) "
        "-> epsilon_cutoff(0.0003) -> eta_cutoff(0.002) -> sample")
    m2 = {"do_sample": True, "mirostat": 2, "temperature": 0.8}
    assert Chain10(m2, "llama.cpp", 10, 16, [9]).describe() == "temperature(0.8) -> mirostat_v2(tau=5, eta=0.1)"
    assert Chain10({"do_sample": False, "dry_multiplier": 0.8, "dry_sequence_breakers": []}, "llama.cpp", 10, 16,
                   [9]).describe() == "dry(0.8, 1.75, 2, -1) -> argmax"
    for knobs, order in (({"dry_multiplier": 0.8, "dry_sequence_breakers": []}, "hf"), ({"typical_p": 0.9}, "vllm"),
                         ({"sequence_bias": [[[1], 1.0]]}, "llama.cpp"), ({"xtc_probability": 0.5}, "hf")):
        try:
            Chain10(dict(knobs, do_sample=True), order, 10, 16, [9])
            raise AssertionError("accepted %r under %s" % (knobs, order))
        except ValueError:
            pass
    # temperature 0 under llama.cpp's order runs the whole chain (common_sampler_init): typical-p and
    # XTC remove the argmax, temperature 0 keeps the largest logit left; dynatemp at T 0 samples
    peaked = torch.log(torch.tensor([0.5, 0.21, 0.19, 0.025, 0.025, 0.025, 0.025], dtype=torch.float64))
    t0 = {"do_sample": True, "temperature": 0.0, "typical_p": 0.3}
    c = Chain10(t0, "llama.cpp", 7, 16, [6])
    assert c.describe() == "typical_p(0.3) -> temperature(0) -> argmax", c.describe()
    assert c.pick(peaked, [0], [], 0, 0.0, 0)[0] == 1
    assert Chain10(t0, "hf", 7, 16, [6]).pick(peaked, [0], [], 0, 0.0, 0)[0] == 0
    assert Chain10(dict(t0, do_sample=False), "llama.cpp", 7, 16, [6]).pick(peaked, [0], [], 0, 0.0, 0)[0] == 0
    xtc = {"do_sample": True, "temperature": 0.0, "xtc_probability": 1.0, "xtc_threshold": 0.1}
    three = torch.log(torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64))
    assert Chain10(xtc, "llama.cpp", 3, 16, [2]).pick(three, [0], [], 0, 0.0, 0)[0] == 2
    dyn = Chain10({"do_sample": True, "temperature": 0.0, "dynatemp_range": 1.0}, "llama.cpp", 4, 16, [3])
    assert dyn.describe() == "dynatemp(0, 1, 1) -> sample", dyn.describe()
    flat = torch.zeros(4, dtype=torch.float64)
    assert dyn.pick(flat, [0], [], 0, 0.1, 0)[0] == 0 and dyn.pick(flat, [0], [], 0, 0.9, 0)[0] == 3
    # xtc_coin is a pure function of (seed, step), and different steps differ
    assert xtc_coin(42, 3) == xtc_coin(42, 3) and xtc_coin(42, 3) != xtc_coin(42, 4)
    assert xtc_coin(42, 0) == rng.Rng(42 ^ rng.splitmix64(XTC_SALT)[1]).coin()
    # on the tiny random model: greedy with no pre-|| stage is decode.greedy; seeded runs repeat
    import decode
    m = gpt2._random_model()
    ref = decode.greedy(m, [1, 2, 3], 8)["ids"]
    assert generate(m, [1, 2, 3], {}, "hf", 5, 8, [m.eos_token_id])["ids"] == ref
    for knobs, order in ((m2, "llama.cpp"), (dict(m2, mirostat=1), "llama.cpp"), (hf, "hf"),
                         (dict(full, dry_sequence_breakers=[]), "llama.cpp")):
        a = generate(m, [1, 2], knobs, order, 3, 10, [m.eos_token_id], breakers=[])
        b = generate(m, [1, 2], knobs, order, 3, 10, [m.eos_token_id], breakers=[])
        assert a == b and len(a["ids"]) >= 1


def selftest():
    selftest_engines()
    selftest_dry()
    selftest_breakers()
    selftest_mirostat()
    selftest_dynatemp()
    selftest_chain()
    print("other_samplers selftest ok")


if __name__ == "__main__":
    selftest()
