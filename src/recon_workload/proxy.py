"""A fault-injecting TCP proxy for the Kafka wire protocol: it really loses produce acks.

The broker advertises its FAULTY listener at the proxy's port, so a client bootstrapped at the
proxy talks to the broker only through it. The proxy forwards every request and every response
byte for byte, except that it swallows chosen Produce responses: the broker has appended the
batch, the producer never hears so, times the request out and sends the batch again. That is
exactly how a lost ack turns into a duplicate in the topic (or, for an idempotent producer, how
the broker's de-duplication gets exercised).

Kafka frames are ``int32 size`` + body. A request body starts with ``int16 api_key, int16
api_version, int32 correlation_id``; a response body starts with ``int32 correlation_id``. The
proxy remembers which correlation ids belong to Produce requests (api key 0) per connection.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import socket
import struct
import threading
from dataclasses import dataclass, field

PRODUCE_API_KEY = 0


@dataclass
class DropPolicy:
    """Which Produce responses to swallow.

    :param rate: probability of dropping any one Produce response.
    :param seed: seeds the choice, so a run with the same traffic drops the same responses.
    :param force_nth: drop the n-th Produce response (1-based) if nothing was dropped before it,
        so a small run is sure to lose at least one ack; 0 disables.
    :param max_drops: stop dropping after this many (keeps retries, and the run, bounded).
    """

    rate: float = 0.0
    seed: int = 0
    force_nth: int = 2
    max_drops: int = 5
    seen: int = 0
    dropped: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self._lock = threading.Lock()

    def decide(self) -> bool:
        """Called once per Produce response; ``True`` means swallow it."""
        with self._lock:
            self.seen += 1
            if len(self.dropped) >= self.max_drops:
                return False
            roll = self._rng.random() < self.rate
            forced = self.force_nth > 0 and self.seen == self.force_nth and not self.dropped
            if roll or forced:
                self.dropped.append(self.seen)
                return True
            return False


def _read_exact(sock: socket.socket, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _read_frame(sock: socket.socket) -> bytes | None:
    head = _read_exact(sock, 4)
    if head is None:
        return None
    (size,) = struct.unpack(">i", head)
    body = _read_exact(sock, size)
    return None if body is None else head + body


class FaultProxy:
    """Listens on ``listen_port`` and forwards to ``target_port`` on loopback, in daemon threads.

    :param listen_port: the port the broker advertises for its FAULTY listener.
    :param target_port: the broker's FAULTY listener.
    :param policy: which Produce responses to swallow.
    :param lock_path: a file locked while the proxy runs: the broker advertises one port for its
        FAULTY listener, so two proxies (two workload runs at once, in two processes) take turns
        instead of failing with 'Address already in use'. ``None``: no lock.
    """

    def __init__(
        self, listen_port: int, target_port: int, policy: DropPolicy, lock_path: str | None = None
    ) -> None:
        self.listen_port = listen_port
        self.target_port = target_port
        self.policy = policy
        self.lock_path = lock_path
        self._lock_fd: int | None = None
        self._server: socket.socket | None = None
        self._sockets: list[socket.socket] = []
        self._stop = threading.Event()

    @classmethod
    def from_env(cls, policy: DropPolicy) -> FaultProxy:
        """The proxy for the project's broker: ports from ``scripts/env.sh``, its lock file in
        the project's state folder.

        :param policy: which Produce responses to swallow.
        """
        from recon.settings import state_dir

        return cls(
            int(os.environ.get("RECON_KAFKA_PROXY_PORT", "23095")),
            int(os.environ.get("RECON_KAFKA_FAULTY_PORT", "23094")),
            policy,
            lock_path=os.path.join(state_dir(), "fault-proxy.lock"),
        )

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.listen_port}"

    def __enter__(self) -> FaultProxy:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Waits for the lock (when one is set), then listens."""
        if self.lock_path is not None:
            os.makedirs(os.path.dirname(self.lock_path) or ".", exist_ok=True)
            fd = os.open(self.lock_path, os.O_CREAT | os.O_RDWR, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._lock_fd = fd
        try:
            server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            server.bind(("127.0.0.1", self.listen_port))
            server.listen(16)
        except BaseException:
            self._unlock()
            raise
        self._server = server
        threading.Thread(target=self._accept_loop, daemon=True, name="proxy-accept").start()

    def stop(self) -> None:
        self._stop.set()
        for sock in [self._server, *self._sockets]:
            if sock is None:
                continue
            with contextlib.suppress(OSError):  # already closed by the other side
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        self._unlock()

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor releases the lock
            self._lock_fd = None

    def _accept_loop(self) -> None:
        assert self._server is not None
        while not self._stop.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=10)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            self._sockets += [client, upstream]
            produce_ids: set[int] = set()
            lock = threading.Lock()
            threading.Thread(
                target=self._pump_requests,
                args=(client, upstream, produce_ids, lock),
                daemon=True,
            ).start()
            threading.Thread(
                target=self._pump_responses,
                args=(upstream, client, produce_ids, lock),
                daemon=True,
            ).start()

    def _pump_requests(
        self, src: socket.socket, dst: socket.socket, produce_ids: set[int], lock: threading.Lock
    ) -> None:
        try:
            while (frame := _read_frame(src)) is not None:
                api_key, _version, corr = struct.unpack(">hhi", frame[4:12])
                if api_key == PRODUCE_API_KEY:
                    with lock:
                        produce_ids.add(corr)
                dst.sendall(frame)
        except OSError:
            pass  # either side went away; closing both below ends the pair
        finally:
            _close_both(src, dst)

    def _pump_responses(
        self, src: socket.socket, dst: socket.socket, produce_ids: set[int], lock: threading.Lock
    ) -> None:
        try:
            while (frame := _read_frame(src)) is not None:
                (corr,) = struct.unpack(">i", frame[4:8])
                with lock:
                    is_produce = corr in produce_ids
                    produce_ids.discard(corr)
                if is_produce and self.policy.decide():
                    continue  # the broker appended the batch; the producer never learns it
                dst.sendall(frame)
        except OSError:
            pass
        finally:
            _close_both(src, dst)


def _close_both(a: socket.socket, b: socket.socket) -> None:
    for sock in (a, b):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        sock.close()
