#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# pktmap metrics, scraped by a real Prometheus:
#
#   gen --pipe--> recv          (N frames at a fixed rate)
#        |            |
#   published counters (src/pub.h)
#        |
#   pktmap metrics --listen 127.0.0.1:0  <--scrape every 1 s--  prometheus
#                                                               (127.0.0.1)
#   the test asks Prometheus' HTTP API
#
# Checks: the last scraped total = N = what recv reports; Prometheus'
# rate() over the window between two scrapes = the counter's delta over
# those scrapes' timestamps (to 0.5%), and within 5% of the rate recv
# printed. Then bad input: malformed requests get an HTTP error and the
# listener goes on serving; 100 clients holding connections (trickling a
# request, idle, reconnecting) do not keep scrapes from their answer; the
# listener binds loopback unless told.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

need_cmd python3
need_cmd curl
need_cmd prometheus

PORT_NAME="pipe:${PIPE}m"
N=120000
RATE=20000 # 6 s of traffic: several scrapes land inside it

# 1. The listener: port 0 picks a free one, printed; loopback by default.
BG_TIMEOUT=120 bg "$PKTMAP" metrics --listen 0 >"$TMP/metrics.out"
metrics_pid=$BG_PID
wait_for "$TMP/metrics.out" '^pktmap metrics: listening on '
url=$(grep -o 'http://[^ ]*' "$TMP/metrics.out")
case "$url" in
http://127.0.0.1:*/metrics) ;;
*) fail "the listener is not on loopback by default: $url" ;;
esac
hostport=${url#http://}
hostport=${hostport%/metrics}
mport=${hostport##*:}
echo "1. listening on $url"

# 2. Prometheus, on a free loopback port, with a config of ours.
pport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$TMP/prom.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: pktmap
    static_configs:
      - targets: ['127.0.0.1:$mport']
EOF
BG_TIMEOUT=120 bg prometheus --config.file="$TMP/prom.yml" \
	--storage.tsdb.path="$TMP/tsdb" --web.listen-address="127.0.0.1:$pport" \
	--log.level=warn
prom_pid=$BG_PID
PROM="http://127.0.0.1:$pport"
for _ in $(seq 300); do
	curl -sf "$PROM/-/ready" >/dev/null 2>&1 && break
	sleep 0.1
done
curl -sf "$PROM/-/ready" >/dev/null || fail "prometheus did not come up"
# the target is up (one successful scrape)
promq() { # promq QUERY [TIME]: the value of an instant query's first result
	python3 - "$PROM" "$@" <<'EOF'
import json, sys, urllib.parse, urllib.request
q = {"query": sys.argv[2]}
if len(sys.argv) > 3:
    q["time"] = sys.argv[3]
r = json.load(urllib.request.urlopen(sys.argv[1] + "/api/v1/query?" + urllib.parse.urlencode(q)))
res = r["data"]["result"]
print(res[0]["value"][1] if res else "none")
EOF
}
wait_output 1 promq 'up{job="pktmap"}'
expect_eq "prometheus scrapes pktmap metrics" "$(promq 'up{job="pktmap"}')" 1
echo "2. prometheus on 127.0.0.1:$pport scrapes $url"

# 3. Traffic while it scrapes.
BG_TIMEOUT=120 bg "$PKTMAP" recv -i "$PORT_NAME}0" -T 0 -q --json >"$TMP/recv.json"
recv_pid=$BG_PID
sel="pktmap_port_packets_total{port=\"$PORT_NAME}0\",direction=\"rx\"}"
wait_output 0 promq "$sel"
expect_eq "recv's port scraped" "$(promq "$sel")" 0
"$PKTMAP" gen -i "$PORT_NAME{0" -n $N -R $RATE -T 0 -q --json >"$TMP/gen.json"
expect_eq "gen sent" "$(json "$TMP/gen.json" packets)" $N
wait_output $N promq "$sel"
expect_eq "scraped total after the run" "$(promq "$sel")" $N
stop_bg "$recv_pid"
wait_bg "$recv_pid"
expect_eq "recv's report" "$(json "$TMP/recv.json" packets)" $N
recv_pps=$(json "$TMP/recv.json" pps)
echo "3. scraped total $N = gen's = recv's"

# 4. rate(): the samples Prometheus stored, and its rate() over the exact
# window between the first and the last sample taken while traffic ran.
python3 - "$PROM" "$sel" "$N" "$recv_pps" <<'EOF' || fail "rate() check"
import json, sys, urllib.parse, urllib.request
prom, sel, n, recv_pps = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
def q(query, t=None):
    p = {"query": query}
    if t is not None:
        p["time"] = repr(t)
    return json.load(urllib.request.urlopen(prom + "/api/v1/query?" + urllib.parse.urlencode(p)))["data"]["result"]
raw = q(sel + "[10m]")
samples = [(float(t), int(v)) for t, v in raw[0]["values"]]
assert samples[-1][1] == n, "last sample %d, want %d" % (samples[-1][1], n)
assert all(b[1] >= a[1] for a, b in zip(samples, samples[1:])), "counter went back"
inside = [s for s in samples if 0 < s[1] < n]
assert len(inside) >= 2, "fewer than two scrapes during the run: %s" % samples
(t1, v1), (t2, v2) = inside[0], inside[-1]
delta = (v2 - v1) / (t2 - t1)
# A range of (t2 - t1) + 1 ms ending at t2 holds exactly these samples.
w = int(round((t2 - t1) * 1000)) + 1
r = q("rate(%s[%dms])" % (sel, w), t2)
prate = float(r[0]["value"][1])
print("window %.3f s, %d samples: counter delta %.1f/s, rate() %.1f/s, recv printed %.1f pps"
      % (t2 - t1, len(inside), delta, prate, recv_pps))
assert abs(prate - delta) <= 0.005 * delta, "rate() %.1f != delta %.1f" % (prate, delta)
assert abs(prate - recv_pps) <= 0.05 * recv_pps, "rate() %.1f vs recv's %.1f pps" % (prate, recv_pps)
EOF
echo "4. rate() over the run = the counters' delta, within 5% of recv's rate"

# 5. Bad requests: an HTTP error each, and the listener keeps serving.
http_raw() { # http_raw BYTES: send them, print the status line
	python3 - "$hostport" "$1" <<'EOF'
import socket, sys
host, port = sys.argv[1].rsplit(":", 1)
s = socket.create_connection((host, int(port)), timeout=10)
s.sendall(sys.argv[2].encode().decode("unicode_escape").encode("latin-1"))
data = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    data += b
print(data.split(b"\r\n", 1)[0].decode("latin-1"))
EOF
}
expect_eq "garbage" "$(http_raw 'hello there\r\n\r\n')" "HTTP/1.1 400 Bad Request"
expect_eq "binary" "$(http_raw '\x00\x01\x02\xff\r\n\r\n')" "HTTP/1.1 400 Bad Request"
expect_eq "no version" "$(http_raw 'GET /metrics\r\n\r\n')" "HTTP/1.1 400 Bad Request"
expect_eq "POST" "$(http_raw 'POST /metrics HTTP/1.1\r\n\r\n')" "HTTP/1.1 405 Method Not Allowed"
expect_eq "other path" "$(http_raw 'GET /etc/passwd HTTP/1.1\r\n\r\n')" "HTTP/1.1 404 Not Found"
big=$(head -c 9000 /dev/zero | tr '\0' a)
expect_eq "huge head" "$(http_raw "GET /$big HTTP/1.1\r\n\r\n")" "HTTP/1.1 431 Request Header Fields Too Large"
expect_eq "half a request, then silence" "$(http_raw 'GET /metr')" "HTTP/1.1 408 Request Timeout"
code=$(curl -s -o "$TMP/scrape.txt" -w '%{http_code}' "$url")
expect_eq "a good scrape after all that" "$code" 200
grep -q '^pktmap_ports ' "$TMP/scrape.txt" || fail "no pktmap_ports in the scrape"
kill -0 "$metrics_pid" || fail "the listener died"
echo "5. malformed requests: 400, 405, 404, 431, 408; the listener still serves"

# 6. Clients that hold the listener (tests/system/http_attack.py): a
# trickler sends a request head one byte every 0.2 s (never complete), an
# idle client connects and sends nothing; each reconnects as soon as it
# is dropped. 20 of each: scrapes get their page all the same, and the
# tricklers their 408 (the deadline is on the whole request, not on each
# read). Then 100 idle ones, more than the 64 the listener keeps: scrapes
# still get their page.
attack() { # attack NTRICKLE NIDLE: start them, wait until connected
	: >"$TMP/attack.log"
	BG_TIMEOUT=120 bg python3 "$(dirname "$0")/http_attack.py" "${hostport%:*}" \
		"$mport" "$1" "$2" "$TMP/attack.log" >"$TMP/attack.out"
	attack_pid=$BG_PID
	wait_for "$TMP/attack.out" '^ready$'
}
scrapes() { # scrapes WHAT: five scrapes, each must get the page
	local i got
	for i in 1 2 3 4 5; do
		got=$(curl -s --max-time 10 -o "$TMP/scrape.txt" -w '%{http_code} %{time_total}' "$url") || true
		expect_eq "scrape $i while $1" "${got%% *}" 200
		grep -q '^pktmap_ports ' "$TMP/scrape.txt" || fail "scrape $i: no pktmap_ports"
		echo "   scrape $i while $1: ${got#* } s"
	done
}
attack 20 20
scrapes "20 trickle and 20 idle"
wait_for "$TMP/attack.log" '^trickle HTTP/1.1 408 Request Timeout$'
kill "$attack_pid"
wait "$attack_pid" 2>/dev/null || true
attack 0 100
scrapes "100 idle reconnect"
kill "$attack_pid"
wait "$attack_pid" 2>/dev/null || true
kill -0 "$metrics_pid" || fail "the listener died"
echo "6. tricklers and idle clients, reconnecting: every scrape answered, tricklers got 408"

# 7. Bad --listen values: one line each, exit 2; an address that cannot
# be listened on (taken): one line, exit 1 (a run-time failure).
for bad in "nonsense" "1.2.3.4.5:80" "127.0.0.1:99999" "127.0.0.1:" "host.example:80"; do
	set +e
	"$PKTMAP" metrics --listen "$bad" >"$TMP/bad.out" 2>"$TMP/bad.err"
	rc=$?
	set -e
	expect_eq "--listen $bad: exit" "$rc" 2
	expect_eq "--listen $bad: lines" "$(wc -l <"$TMP/bad.err")" 1
	grep -q '^pktmap: metrics: ' "$TMP/bad.err" || fail "--listen $bad: $(cat "$TMP/bad.err")"
done
set +e
"$PKTMAP" metrics --listen "$hostport" >"$TMP/bad.out" 2>"$TMP/bad.err"
rc=$?
set -e
expect_eq "--listen on a taken port: exit" "$rc" 1
expect_eq "--listen on a taken port: lines" "$(wc -l <"$TMP/bad.err")" 1
grep -q '^pktmap: metrics: cannot listen on ' "$TMP/bad.err" || fail "taken port: $(cat "$TMP/bad.err")"
echo "7. bad --listen values: one line each, exit 2; a taken port: exit 1"
kill "$prom_pid"
wait "$prom_pid" 2>/dev/null || true
echo PASS
