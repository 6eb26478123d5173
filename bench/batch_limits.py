"""Issue 19's figures: what one bad job could cost the batch it runs in (python -m bench.batch_limits).

- `trickle`: how long one delivery is held by a receiver that sends its answer one byte a second,
  with the read timeout at 2 s (each read gets a byte in time, so only a total deadline ends it).
- `decode`: the peak resident memory of a fresh process that makes thumbnails of four 81-million-pixel
  RGBA PNGs (315 KB each) on four threads at once, as a worker's batch would, under the default
  worker's decode budget (1,024 MB of memory).
- `dns`: how long the API's submission check of a fan-out to 160 hosts takes when every look-up takes
  1 s (a resolver replaced by one that sleeps; no real DNS).

Not part of `python -m bench`: these are limits a fix holds, measured before and after it, not goals
of issue 11. Each runs in its own child process, so nothing measured before it counts.
"""

import subprocess
import sys

_TRICKLE = """
import socket, threading, time
from lambdas.jobs import ssrf, webhook_http

def serve(listener):
    conn, _ = listener.accept()
    conn.recv(65536)
    try:
        for byte in b"HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\nX-Pad: aaaaaa\\r\\n\\r\\nok":
            conn.sendall(bytes([byte]))
            time.sleep(1)
    except OSError:
        pass

listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen()
threading.Thread(target=serve, args=(listener,), daemon=True).start()
policy = ssrf.TargetPolicy(allow_http=True, allow_loopback=True)
url = f"http://127.0.0.1:{listener.getsockname()[1]}/hook"
target = ssrf.resolve(ssrf.parse(url, policy), policy)
started = time.monotonic()
outcome = webhook_http.post(target, b"{}", {}, connect_timeout=3, read_timeout=2)
print(f"trickle: held {time.monotonic() - started:.1f} s; {outcome.status or outcome.error}")
"""

_DECODE = """
import io, resource, struct, threading, zlib
from lambdas.jobs import files

def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

width = height = 9000
packer = zlib.compressobj(9)
row = bytes(1 + 4 * width)
idat = b"".join(packer.compress(row) for _ in range(height)) + packer.flush()
ihdr = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
png = b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
budget = files.decode_budget(1024)
outcomes = []

def one():
    try:
        outcomes.append(len(list(files.thumbnails(io.BytesIO(png), (512, 128), budget, 120))))
    except Exception as error:
        outcomes.append(f"{type(error).__name__}: {error}")

threads = [threading.Thread(target=one) for _ in range(4)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"decode: 4 x {len(png) // 1000} KB PNGs of {width * height / 1e6:.0f} Mpx: peak {peak:,.0f} MB; {outcomes}")
"""

_DNS = """
import time
from lambdas import config
from lambdas.jobs import ssrf
from lambdas.jobs.types import webhook_fanout
from lambdas.lifecycle.attempt import capabilities
from lambdas.models.settings import ApiSettings

def slow_lookup(host, port):
    time.sleep(1)
    return ["93.184.216.34"]

ssrf.lookup = slow_lookup
names = (config.ENV_JOBS_TABLE, config.ENV_QUEUE_URL, config.ENV_UPLOADS_BUCKET, config.ENV_OPERATOR_KEY_ID,
         config.ENV_DLQ_URL, config.ENV_DELIVERIES_TABLE)
context = capabilities.submission_context_for(ApiSettings.load({name: "x" for name in names}))
endpoints = [{"id": f"e{i}", "url": f"https://h{i}.example.com/"} for i in range(160)]
payload = webhook_fanout.WebhookFanoutPayload.model_validate({"eventType": "e", "data": {}, "endpoints": endpoints})
started = time.monotonic()
webhook_fanout.check_submission(payload, context)
print(f"dns: 160 hosts at 1 s a look-up: checked in {time.monotonic() - started:.1f} s")
"""


def main() -> None:
    for script in (_TRICKLE, _DECODE, _DNS):
        subprocess.run([sys.executable, "-c", script], check=True)


if __name__ == "__main__":
    main()
