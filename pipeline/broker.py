"""The Dramatiq broker: Redis, the map's queues (``pipeline.stages``), retries into a kept dead-letter queue."""

from __future__ import annotations

import dramatiq
from dramatiq.brokers.redis import RedisBroker
from dramatiq.middleware import AgeLimit, Callbacks, CurrentMessage, Pipelines, Retries, ShutdownNotifications, TimeLimit

from pipeline.actor_context import ActorContext, find_context
from pipeline.config import Settings
from pipeline.embedding import import_provider_libraries
from pipeline.observability.actor_metrics import ActorMetrics
from pipeline.observability.requestid import TraceMiddleware
from pipeline.redelivery import MAINTAIN_COMMAND, PeriodicRedelivery, maintenance_interval_s
from pipeline.retry_policy import retry_when
from pipeline.stopping import StopNotice
from pipeline.stages import ALL_QUEUES, EMBED_QUEUE, HOT_QUEUES
from pipeline.store_wait import wait_for_stores
from pipeline.wakeups import WakeConsumers, WakingConsumer, blocking_wait, wake
from pipeline.write_failures import WriteFailures

NAMESPACE = "mempipe"
COLD_POLL_MS = 1000
# The embed stage takes one message per worker process at a time. Its work is serialised by
# the model anyway, and a message that waits for the model in the process (prefetched, or on
# a second thread) keeps what queues behind it out of the drain (``pipeline.drain``): with
# Dramatiq's prefetch (twice the threads), 8 clients of single writes became model calls of
# ~1.8 writes each. Held in the broker instead, they join the next call.
PREFETCH_BY_QUEUE = {EMBED_QUEUE: 1}


def held_messages_key(queue: str) -> str:
    """The hash of a queue's messages, waiting or being worked on: Dramatiq's Redis broker keeps
    a message there until it is acknowledged (``queue`` may name a delay queue, ``<q>.DQ``)."""
    return f"{NAMESPACE}:{queue}.msgs"


def any_held(client, queues) -> bool:
    """Does any of ``queues`` hold a message (waiting or being worked on)? One round trip."""
    pipe = client.pipeline(transaction=False)
    for queue in queues:
        pipe.hlen(held_messages_key(queue))
    return any(pipe.execute())


def write_path_busy(client) -> bool:
    """Does any write-path queue (persist, embed, vectors) hold a message? One round trip."""
    return any_held(client, sorted(HOT_QUEUES))


class MempipeBroker(RedisBroker):
    """RedisBroker whose write-path consumers wait to be woken rather than poll.

    Consumers of the hot queues (persist, embed, vectors) block on the queue's wake list when
    they find it empty, up to ``QUEUE_POLL_MS``; every enqueue, and every message put back,
    wakes them (``pipeline.wakeups``). Delay queues and the other queues poll as Dramatiq
    does, backing off up to a second. A dead worker's messages are handed back by a periodic
    maintenance round (``pipeline.redelivery``), not only by Dramatiq's random one.
    """

    def __init__(self, *, hot_poll_ms: int, **kwargs):
        super().__init__(**kwargs)
        self.hot_poll_ms = hot_poll_ms

    def consume(self, queue_name: str, prefetch: int = 1, timeout: int = 5000):
        prefetch = PREFETCH_BY_QUEUE.get(queue_name, prefetch)
        if queue_name in HOT_QUEUES:
            # timeout 0: the inner consumer never sleeps on a miss; the wrapper's wait does
            inner = super().consume(queue_name, prefetch=prefetch, timeout=0)
            wait = blocking_wait(self.client, self.namespace, queue_name, self.hot_poll_ms / 1000)
            return WakingConsumer(inner, wait)
        return super().consume(queue_name, prefetch=prefetch, timeout=min(timeout, COLD_POLL_MS))

    def _should_do_maintenance(self, command: str) -> int:
        return 1 if command == MAINTAIN_COMMAND else super()._should_do_maintenance(command)

    def maintain(self) -> None:
        """Move dead workers' unacknowledged messages back onto every declared queue and delay
        queue (and expire old dead letters): one dispatch-script call per queue."""
        maintain = self._dispatch(MAINTAIN_COMMAND)
        for queue_name in (*sorted(self.get_declared_queues()), *sorted(self.get_declared_delay_queues())):
            maintain(queue_name)

    def wake_consumers(self, queue_name: str) -> None:
        if queue_name in HOT_QUEUES:
            wake(self.client, self.namespace, queue_name)

    def do_requeue(self, queue_name: str, *message_ids: str):
        """Put fetched messages back (a stopping worker, a drain that failed) and wake a consumer."""
        result = self._dispatch("requeue")(queue_name, *message_ids)
        self.wake_consumers(queue_name)
        return result


class PreloadEmbedder(dramatiq.Middleware):
    """A worker that consumes the embed queue loads its embedding model at boot.

    Loading MiniLM (torch, its weights) takes seconds of CPU; done lazily, the first
    embed message of every worker process paid it, and a freshly scaled-out worker looked
    slow exactly when it was needed. Workers without the embed queue never load a model.
    """

    def before_worker_boot(self, broker, worker):
        # The libraries first, before WaitForStores: their import overlaps a store that is loading.
        context = find_context(broker)
        if context is not None and _consumes_embed(worker):
            import_provider_libraries(context.services.settings)

    def after_worker_boot(self, broker, worker):
        context = find_context(broker)
        if context is not None and _consumes_embed(worker):
            context.services.embedder  # built once per process, shared by its threads


def _consumes_embed(worker) -> bool:
    queues = getattr(worker, "consumer_whitelist", None)  # None: every queue
    return queues is None or EMBED_QUEUE in queues


class WaitForStores(dramatiq.Middleware):
    """In a process the ``dramatiq`` command started, no consumer starts before the broker and
    the graph answer (``pipeline.store_wait``): a worker started beside a loading store waits
    for it instead of logging connection errors. Workers started inside another process (the
    web's vector workers, tests) start once that process has its stores."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self._worker_process = False

    def after_process_boot(self, broker):
        self._worker_process = True

    def before_worker_boot(self, broker, worker):
        if self._worker_process:
            wait_for_stores(self.settings)


def build_broker(settings: Settings, context: ActorContext | None = None) -> MempipeBroker:
    """The broker; ``context`` gives its actors their services (absent: a broker only to send or inspect)."""
    middleware = [
        AgeLimit(),
        TimeLimit(time_limit=int(settings.actor_time_limit_s * 1000)),
        ShutdownNotifications(),
        StopNotice(),
        Callbacks(),
        Pipelines(),
        CurrentMessage(),
        WriteFailures(),  # before Retries: its after-hook runs once Retries has failed a message
        # After the last retry Dramatiq moves the message to the queue's dead-letter set
        # (<namespace>:<queue>.XQ); ops.deadletters lists and replays it. Connection errors
        # get a longer window than other errors (pipeline.retry_policy).
        Retries(
            max_retries=settings.actor_max_retries,
            min_backoff=settings.retry_min_backoff_ms,
            max_backoff=settings.retry_max_backoff_ms,
            retry_when=retry_when(settings),
        ),
        TraceMiddleware(),  # carries the request id from the API through every stage
        ActorMetrics(settings),  # dramatiq_* per-actor metrics; the worker-side exporter
        PreloadEmbedder(),
        WaitForStores(settings),  # after PreloadEmbedder: its imports run while the stores may still load
        WakeConsumers(HOT_QUEUES),
        PeriodicRedelivery(maintenance_interval_s(settings.heartbeat_timeout_ms)),
        *([context] if context is not None else []),
    ]
    broker = MempipeBroker(
        url=settings.redis_url,
        namespace=NAMESPACE,
        middleware=middleware,
        heartbeat_timeout=settings.heartbeat_timeout_ms,
        dead_message_ttl=settings.dead_message_ttl_days * 86_400_000,
        hot_poll_ms=settings.queue_poll_ms,
        socket_timeout=10,
        socket_connect_timeout=3,
        health_check_interval=30,
    )
    for queue in ALL_QUEUES:
        broker.declare_queue(queue)
    return broker


def install_broker(settings: Settings, context: ActorContext) -> MempipeBroker:
    """Build the broker and make it Dramatiq's global one (actors bind to it at import)."""
    from pipeline.packing import OrjsonEncoder

    broker = build_broker(settings, context)
    dramatiq.set_encoder(OrjsonEncoder())
    dramatiq.set_broker(broker)
    return broker
