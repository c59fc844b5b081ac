#!/usr/bin/env python3
"""Load decodebook-serve with open-loop Poisson arrivals and print what serving costs (issue 38).

    tools/serve_load.py BUILD_DIR [--rates 4,8,16] [--requests 48] [--csv FILE] [--svg FILE]
                                  [--saturation 128] [--repeats 5]

For prefix caching on and off, and each rate (requests per second), it starts decodebook-serve on a
free loopback port, sends a fixed workload (a shared preamble and one of eight questions per
request, as chapter 12's part 3; 32 tokens each, sampled, seeded) at seeded Poisson arrival times,
each request streamed by its own thread, and measures from the client: time to first token (TTFT),
time per output token after it (TPOT), throughput, goodput (requests within the SLO both ways), and
the prefix cache's hit rate from /metrics. Beside each HTTP row it prints the same workload served
in-process (decodebook-serve --replay: serve_paged on the wall clock, no HTTP, no streaming), so
the difference is what HTTP and streaming cost. --svg draws the rows (the site's plot).

Then, at saturation (--saturation requests all arriving at once, so the server always has a full
batch), it measures throughput over HTTP and in-process in turn, --repeats times, alternating which
goes first, and prints each pair's ratio and their median: on a shared host one pair is within its
noise, and taking turns spreads the host's slow moments over both.

A benchmark that prints figures, not a test: each run is bounded in requests (--requests,
--saturation) and in time (--max-seconds), and listens on 127.0.0.1 only.
"""
import argparse
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


def svg_plot(rows, path, title):
    """Two panels, throughput and TTFT p50 (log scale) against the arrival rate, one line per
    setting; plain SVG, no plotting library."""
    import math
    settings = list(dict.fromkeys(r["setting"] for r in rows))
    rates = sorted({r["rate"] for r in rows})
    colors = {"on": "#1f77b4", "off": "#d62728"}
    width, height, pad_l, pad_r, pad_t, pad_b, gap = 820, 330, 62, 16, 40, 96, 70
    panel_w = (width - pad_l - pad_r - gap) / 2
    panel_h = height - pad_t - pad_b
    lo, hi = math.log(min(rates)), math.log(max(rates))
    def x_at(left, rate):
        return left + (math.log(rate) - lo) / ((hi - lo) or 1) * panel_w
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="12">', f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{width / 2}" y="18" text-anchor="middle" font-size="13">{title}</text>']
    panels = [("throughput (tokens/s)", "tokens_per_s", False), ("time to first token, p50 (ms)", "ttft_p50", True)]
    for k, (label, key, log) in enumerate(panels):
        left = pad_l + k * (panel_w + gap)
        values = [r[key] for r in rows if r[key] == r[key] and r[key] > 0]
        if log:
            v_lo, v_hi = 10 ** math.floor(math.log10(min(values))), 10 ** math.ceil(math.log10(max(values)))
            ticks = [10 ** e for e in range(int(math.log10(v_lo)), int(math.log10(v_hi)) + 1)]
            def y_at(v):
                return pad_t + panel_h - (math.log(v) - math.log(v_lo)) / (math.log(v_hi) - math.log(v_lo)) * panel_h
        else:
            step = 10 ** math.floor(math.log10(max(values))) / 2
            v_hi = math.ceil(max(values) / step) * step
            ticks = [i * step for i in range(int(round(v_hi / step)) + 1)]
            def y_at(v):
                return pad_t + panel_h - v / v_hi * panel_h
        out.append(f'<rect x="{left}" y="{pad_t}" width="{panel_w}" height="{panel_h}" fill="none" stroke="#999"/>')
        for t in ticks:
            out.append(f'<line x1="{left}" x2="{left + panel_w}" y1="{y_at(t):.1f}" y2="{y_at(t):.1f}" stroke="#eee"/>')
            out.append(f'<text x="{left - 4}" y="{y_at(t) + 4:.1f}" text-anchor="end">{t:g}</text>')
        for rate in rates:
            out.append(f'<text x="{x_at(left, rate):.1f}" y="{pad_t + panel_h + 16}" text-anchor="middle">{rate:g}</text>')
        out.append(f'<text x="{left + panel_w / 2}" y="{pad_t + panel_h + 32}" text-anchor="middle">'
                   f'arrival rate (requests/s)</text>')
        out.append(f'<text x="{left + panel_w / 2}" y="{pad_t - 6}" text-anchor="middle">{label}</text>')
        for setting in settings:
            points = [(x_at(left, r["rate"]), y_at(r[key])) for r in rows
                      if r["setting"] == setting and r[key] == r[key] and r[key] > 0]
            color = colors["on" if setting.endswith("on") else "off"]
            dash = "" if setting.startswith("HTTP") else ' stroke-dasharray="5,4"'
            out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2"{dash} points="' +
                       " ".join(f"{x:.1f},{y:.1f}" for x, y in points) + '"/>')
            for x, y in points:
                out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color}"/>')
    for i, setting in enumerate(settings):
        x, y = pad_l + (i % 2) * 300, height - 36 + (i // 2) * 16
        color = colors["on" if setting.endswith("on") else "off"]
        dash = "" if setting.startswith("HTTP") else ' stroke-dasharray="5,4"'
        out.append(f'<line x1="{x}" x2="{x + 30}" y1="{y - 4}" y2="{y - 4}" stroke="{color}" stroke-width="2"{dash}/>')
        out.append(f'<text x="{x + 36}" y="{y}">{setting}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


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
    ap.add_argument("--csv", help="also write the rows as CSV")
    ap.add_argument("--svg", help="also draw the rows as an SVG plot (the site's figure)")
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
    if args.svg:
        svg_plot(rows, args.svg, f"decodebook-serve, {args.requests} requests per rate, {args.max_tokens} tokens each; "
                                 "solid: HTTP, dashed: in-process")
    if args.saturation:
        saturation(args)
    if args.csv:
        with open(args.csv, "w") as f:
            f.write(",".join(rows[0]) + "\n")
            for r in rows:
                f.write(",".join(str(v) for v in r.values()) + "\n")


if __name__ == "__main__":
    main()
