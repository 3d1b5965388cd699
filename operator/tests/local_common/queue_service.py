import collections, os, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BASE = float(os.environ.get("BASE_MS", "10")) / 1000
WAIT_PER_RPS = float(os.environ.get("WAIT_PER_RPS_MS", "0")) / 1000
lock = threading.Lock()
started = collections.deque()

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes: without TCP_NODELAY the second waits for the
    # client's delayed ACK, 40 ms, which would be the service's latency instead of the model's.
    disable_nagle_algorithm = True
    def log_message(self, *a):
        pass
    def answer(self, status):
        self.send_response(status)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")
    def do_GET(self):
        if self.path != "/work":
            return self.answer(200 if self.path == "/healthz" else 404)
        with lock:
            now = time.monotonic()
            started.append(now)
            while started[0] < now - 1.0:
                started.popleft()
            rate = len(started)
            end = now + BASE
            while True:
                left = end - time.monotonic()
                if left <= 0:
                    break
                time.sleep(left)
        # A wait that grows with the rate and holds no lock: latency rises, throughput not.
        time.sleep(WAIT_PER_RPS * rate)
        self.answer(200)

class Server(ThreadingHTTPServer):
    daemon_threads = True
    # Replicas share the port, as the built-in target's do.
    allow_reuse_port = True
    request_queue_size = 1024

Server(("127.0.0.1", int(os.environ["PORT"])), H).serve_forever()
