#!/usr/bin/env python3
"""Load decodebook-serve with open-loop Poisson arrivals and print what serving costs (issue 38).

    tools/serve_load.py BUILD_DIR [--rates 4,8,16] [--requests 48] [--csv FILE]
                                  [--saturation 128] [--repeats 5]

For prefix caching on and off, and each rate (requests per second), it starts decodebook-serve on a
free loopback port, sends a fixed workload (a shared preamble and one of eight questions per
request, as chapter 12's part 3; 32 tokens each, sampled, seeded) at seeded Poisson arrival times,
each request streamed by its own thread, and measures from the client: time to first token (TTFT),
time per output token after it (TPOT), throughput, goodput (requests within the SLO both ways), and
the prefix cache's hit rate from /metrics. Beside each HTTP row it prints the same workload served
in-process (decodebook-serve --replay: serve_paged on the wall clock, no HTTP, no streaming), so
the difference is what HTTP and streaming cost. --csv writes the rows (docs/plots/serving_load.py
draws the recorded run's, docs/plots/data/serve_load.csv, on the site).

Then, at saturation (--saturation requests all arriving at once, so the server always has a full
batch), it measures throughput over HTTP and in-process in turn, --repeats times, alternating which
goes first, and prints each pair's ratio and their median: on a shared host one pair is within its
noise, and taking turns spreads the host's slow moments over both.

A benchmark that prints figures, not a test: each run is bounded in requests (--requests,
--saturation) and in time (--max-seconds), and listens on 127.0.0.1 only.
"""
import argparse
import csv
import http.client
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

PREAMBLE = ("You are a fortune teller at a seaside fair. Answer in one short sentence, kindly, and never "
            "mention the weather. Question: ")
QUESTIONS = ["Will I be rich?", "Should I move to the city?", "Is my cat plotting against me?", "Will it work out?",
             "What should I learn next?", "Am I lucky today?", "Where will I travel?", "Who will I meet?"]


def workload(rate, count, seed, max_tokens):
    """Requests with Poisson arrivals at `rate` per second (seeded), in ms from the start."""
    rng = random.Random(seed)
    t, out = 0.0, []
    for i in range(count):
        t += rng.expovariate(rate) * 1000.0
        out.append({"prompt": PREAMBLE + QUESTIONS[rng.randrange(len(QUESTIONS))], "max_tokens": max_tokens,
                    "min_tokens": max_tokens, "temperature": 0.8, "seed": 1000 + i, "arrival_ms": t})
    return out


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    k = min(len(values) - 1, max(0, int(round(p / 100.0 * (len(values) - 1)))))
    return values[k]


class Server:
    def __init__(self, build, *flags):
        self.proc = subprocess.Popen([os.path.join(build, "decodebook-serve"), "--port", "0", *flags],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline()
        found = re.search(r"on http://127\.0\.0\.1:(\d+)", line)
        if not found:
            self.proc.kill()
            sys.exit("serve_load: decodebook-serve did not start: " + line)
        self.port = int(found.group(1))

    def metrics(self):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        c.request("GET", "/metrics")
        text = c.getresponse().read().decode()
        c.close()
        return {k: float(v) for k, v in (l.split(" ", 1) for l in text.splitlines() if l and not l.startswith("#"))
                if "{" not in k}

    def stop(self):
        self.proc.terminate()
        self.proc.wait(60)


def one_request(port, req, start, deadline, result):
    """Stream one request from its arrival time; record TTFT, TPOT and tokens (one chunk per token)."""
    delay = start + req["arrival_ms"] / 1000.0 - time.monotonic()
    if delay > 0:
        time.sleep(delay)
    sent = time.monotonic()
    if sent > deadline:
        return
    body = {k: req[k] for k in ("prompt", "max_tokens", "temperature", "seed")}
    body.update({"min_new_tokens": req["min_tokens"], "stream": True})
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=max(1.0, deadline - sent))
        c.request("POST", "/v1/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
        r = c.getresponse()
        if r.status != 200:
            result.update(status=r.status)
            return
        times = []
        for raw in r:
            line = raw.decode().strip()
            if line == "data: [DONE]":
                break
            if line.startswith("data: {") and json.loads(line[6:])["choices"][0]["text"]:
                times.append(time.monotonic())
        c.close()
    except OSError as e:
        result.update(status=str(e))
        return
    if times:
        result.update(status=200, ttft_ms=(times[0] - sent) * 1000.0, tokens=len(times), finished=times[-1],
                      tpot_ms=(times[-1] - times[0]) * 1000.0 / (len(times) - 1) if len(times) > 1 else 0.0)


def over_http(server, requests, max_seconds):
    before = server.metrics()
    start = time.monotonic() + 0.2
    deadline = start + max_seconds
    results = [dict() for _ in requests]
    threads = [threading.Thread(target=one_request, args=(server.port, r, start, deadline, results[i]), daemon=True)
               for i, r in enumerate(requests)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()) + 5)
    after = server.metrics()
    done = [r for r in results if r.get("status") == 200]
    reasons = sorted({str(r.get("status", "no answer in time")) for r in results if r.get("status") != 200})
    if reasons:
        print(f"serve_load: {len(results) - len(done)} requests failed: {'; '.join(reasons)}", file=sys.stderr)
    span = (max(r["finished"] for r in done) - start) if done else float("nan")
    queries = after["decodebook_prefix_cache_queries_total"] - before["decodebook_prefix_cache_queries_total"]
    hits = after["decodebook_prefix_cache_hits_total"] - before["decodebook_prefix_cache_hits_total"]
    return done, span, hits / queries if queries else 0.0, len(requests) - len(done)


def in_process(build, requests, flags):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(requests, f)
        path = f.name
    try:
        run = subprocess.run([os.path.join(build, "decodebook-serve"), "--replay", path, *flags], capture_output=True,
                             text=True, timeout=600, check=True)
    finally:
        os.unlink(path)
    lines = [json.loads(l) for l in run.stdout.splitlines() if l.strip()]
    counters, rows = lines[-1], lines[:-1]
    done = [{"ttft_ms": r["ttft_ms"], "tpot_ms": r["tpot_ms"], "tokens": r["tokens"]} for r in rows]
    span = max(r["finished_ms"] for r in rows) / 1000.0
    hit = counters["cache_hits"] / counters["cache_queries"] if counters["cache_queries"] else 0.0
    return done, span, hit, 0


def throughput(done, span):
    return sum(r["tokens"] for r in done) / span if done and span > 0 else float("nan")


def saturation(args):
    """Throughput with every request arriving at once, over HTTP and in-process in turn; the
    median of the pairs' ratios."""
    requests = workload(1.0, args.saturation, args.seed, args.max_tokens)
    for r in requests:
        r["arrival_ms"] = 0.0
    flags = ["--slots", args.slots, "--prefix-caching", "true", "--max-queue", str(args.saturation)]
    print(f"at saturation: {args.saturation} requests arriving at once, {args.max_tokens} tokens each, "
          f"prefix cache on; {args.repeats} pairs, taking turns")
    ratios = []
    for i in range(args.repeats):
        measured = {}
        for how in (("HTTP", "in-process") if i % 2 == 0 else ("in-process", "HTTP")):
            if how == "HTTP":
                server = Server(args.build, *flags)
                try:
                    done, span, _, failed = over_http(server, requests, args.max_seconds)
                finally:
                    server.stop()
                if failed:
                    sys.exit(f"serve_load: {failed} of {len(requests)} requests failed at saturation")
            else:
                done, span, _, _ = in_process(args.build, requests, flags)
            measured[how] = throughput(done, span)
        ratios.append(measured["HTTP"] / measured["in-process"])
        print(f"  pair {i + 1}: HTTP {measured['HTTP']:.0f} tok/s, in-process {measured['in-process']:.0f} tok/s: "
              f"{ratios[-1]:.2f}x")
    print(f"at saturation the server's throughput is {statistics.median(ratios):.2f}x the in-process loop's "
          f"(median of {len(ratios)} pairs; {min(ratios):.2f}-{max(ratios):.2f})")
    return ratios


def row(name, rate, done, span, hit, failed, slo_ttft, slo_tpot):
    ttft = [r["ttft_ms"] for r in done]
    tpot = [r["tpot_ms"] for r in done]
    good = sum(1 for r in done if r["ttft_ms"] <= slo_ttft and r["tpot_ms"] <= slo_tpot)
    return {"setting": name, "rate": rate, "done": len(done), "failed": failed,
            "ttft_p50": percentile(ttft, 50), "ttft_p99": percentile(ttft, 99),
            "tpot_p50": percentile(tpot, 50), "tpot_p99": percentile(tpot, 99),
            "tokens_per_s": throughput(done, span) if span == span else float("nan"),
            "goodput": good / span if span == span and span > 0 else float("nan"), "hit_rate": hit}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build", help="the build folder with decodebook-serve")
    ap.add_argument("--rates", default="4,8,16", help="requests per second, comma-separated (default 4,8,16)")
    ap.add_argument("--requests", type=int, default=48, help="requests per rate (default 48)")
    ap.add_argument("--max-tokens", type=int, default=32, help="tokens per request (default 32)")
    ap.add_argument("--max-seconds", type=float, default=60, help="the most one rate's run may take (default 60)")
    ap.add_argument("--slo-ttft-ms", type=float, default=250, help="goodput's TTFT bound (default 250 ms)")
    ap.add_argument("--slo-tpot-ms", type=float, default=25, help="goodput's TPOT bound (default 25 ms)")
    ap.add_argument("--slots", default="8", help="decodebook-serve --slots (default 8)")
    ap.add_argument("--seed", type=int, default=1, help="the arrivals' and prompts' seed (default 1)")
    ap.add_argument("--csv", help="also write the rows as CSV (the site's plot: docs/plots/data/serve_load.csv)")
    ap.add_argument("--saturation", type=int, default=128,
                    help="requests arriving at once for the saturation pairs; 0 skips them (default 128)")
    ap.add_argument("--repeats", type=int, default=5, help="saturation pairs, taking turns (default 5)")
    args = ap.parse_args()
    rates = [float(r) for r in args.rates.split(",")]
    if args.requests < 1 or args.requests > 2000 or any(r <= 0 or r > 1000 for r in rates):
        sys.exit("serve_load: give 1..2000 requests and rates in (0, 1000] per second")
    if not 0 <= args.saturation <= 2000 or not 1 <= args.repeats <= 50:
        sys.exit("serve_load: give --saturation 0..2000 requests and --repeats 1..50")
    rows = []
    print(f"decodebook-serve under open-loop Poisson load: {args.requests} requests per rate, {args.max_tokens} tokens "
          f"each, slots {args.slots}; SLO TTFT <= {args.slo_ttft_ms:g} ms and TPOT <= {args.slo_tpot_ms:g} ms")
    print(f"{'setting':<28} {'rate':>5} {'done':>5} {'TTFT p50':>9} {'p99':>8} {'TPOT p50':>9} {'p99':>7} "
          f"{'tok/s':>7} {'goodput':>8} {'hits':>5}")
    for caching in ("true", "false"):
        flags = ["--slots", args.slots, "--prefix-caching", caching]
        for rate in rates:
            requests = workload(rate, args.requests, args.seed, args.max_tokens)
            server = Server(args.build, *flags)
            try:
                http_row = row(f"HTTP, prefix cache {'on' if caching == 'true' else 'off'}", rate,
                               *over_http(server, requests, args.max_seconds), args.slo_ttft_ms, args.slo_tpot_ms)
            finally:
                server.stop()
            local_row = row(f"in-process, prefix cache {'on' if caching == 'true' else 'off'}", rate,
                            *in_process(args.build, requests, flags), args.slo_ttft_ms, args.slo_tpot_ms)
            for r in (http_row, local_row):
                rows.append(r)
                print(f"{r['setting']:<28} {r['rate']:>5g} {r['done']:>5} {r['ttft_p50']:>9.1f} {r['ttft_p99']:>8.1f} "
                      f"{r['tpot_p50']:>9.2f} {r['tpot_p99']:>7.2f} {r['tokens_per_s']:>7.0f} {r['goodput']:>8.2f} "
                      f"{r['hit_rate']:>5.0%}")
    top = max(rates)
    for caching in ("on", "off"):
        h = next(r for r in rows if r["rate"] == top and r["setting"] == f"HTTP, prefix cache {caching}")
        p = next(r for r in rows if r["rate"] == top and r["setting"] == f"in-process, prefix cache {caching}")
        print(f"at {top:g} requests/s, prefix cache {caching}: the server's throughput is "
              f"{h['tokens_per_s'] / p['tokens_per_s']:.2f}x the in-process loop's")
    if args.saturation:
        saturation(args)
    if args.csv:
        with open(args.csv, "w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)


if __name__ == "__main__":
    main()
