"""The ``connectd`` command; the only place that turns errors into exit codes.

Exit codes: 0 success; 78 (``EX_CONFIG``) a configuration error, so
systemd's ``RestartPreventExitStatus=78`` stops a restart loop; 2 a usage
error or a verb whose capability has not landed yet; 130 interrupted; 1
anything else.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import os
import signal
import sys
import tempfile
import time
import traceback
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from connectd import __version__
from connectd.broker import EmbeddedBroker, run_broker
from connectd.config.docs import DEFAULT_PATH, PLUGINS_PATH, render_plugin_reference, render_reference
from connectd.config.msk import msk_problems
from connectd.config.worker import WorkerConfig
from connectd.errors import ConfigError, ConnectdError, ConnectorError, NotYetAvailableError
from connectd.logging import configure_logging
from connectd.plugins import get_registry
from connectd.rest.client import DEFAULT_URL, Client
from connectd.secrets import OutputScrubber, redact

# Each verb imports what only it needs where it runs (function-local, each saying so): `connectd
# --help`, `status` or `connectors` must not pay for pyspark, aiohttp or confluent_kafka.

__all__ = ["main"]

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_CONFIG = 78
EXIT_INTERRUPTED = 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="connectd",
        description="A Kafka Connect worker in Python: connectors run as Spark Structured Streaming queries.",
    )
    parser.add_argument("--version", action="version", version=f"connectd {__version__}")
    parser.add_argument(
        "--log-level", default="INFO", metavar="LEVEL", help="TRACE, DEBUG, INFO, WARN, ERROR (default INFO)"
    )
    verbs = parser.add_subparsers(dest="verb", metavar="VERB")
    verbs.required = True

    distributed = verbs.add_parser("distributed", help="run a worker of a Connect cluster")
    distributed.add_argument("worker_config", metavar="FILE", help="connect-distributed.properties")

    standalone = verbs.add_parser("standalone", help="run a single worker with connectors from files")
    standalone.add_argument("worker_config", metavar="FILE", help="connect-standalone.properties")
    standalone.add_argument("connector_configs", metavar="CONNECTOR_FILE", nargs="*",
                            help="connector configs: .properties, or the JSON body of POST /connectors")

    plugins = verbs.add_parser("plugins", help="list installed connectors, converters, transforms, ...")
    plugins.add_argument("--json", action="store_true", help="print JSON instead of a table")

    config = verbs.add_parser("config", help="check a worker config or write the config reference")
    config_verbs = config.add_subparsers(dest="config_verb", metavar="ACTION")
    config_verbs.required = True
    check = config_verbs.add_parser("check", help="print every problem in a worker config; exit 0 or 78")
    check.add_argument("file", metavar="FILE")
    check.add_argument("--mode", choices=("auto", "distributed", "standalone"), default="auto",
                       help="which worker keys apply (auto: standalone if the file sets "
                            "offset.storage.file.filename and no group.id)")
    check.add_argument("--policy", choices=("msk",), help="also flag what AWS MSK Connect would refuse")
    docs = config_verbs.add_parser(
        "docs", help="write the configuration reference and the converters/transforms/predicates page (Markdown)")
    docs.add_argument("--output", "-o", default=None, metavar="PATH",
                      help="write only the configuration reference there (- for stdout); by default "
                           "docs/configuration.md and docs/converters-transforms-predicates.md are written")

    broker = verbs.add_parser("broker", help="run the embedded development broker (tansu) on loopback")
    broker.add_argument("--port", type=int, default=9092, help="port to listen on (default 9092)")
    broker.add_argument("--storage", default="memory://tansu/",
                        help="tansu storage engine URL (default memory://tansu/: nothing kept)")

    quickstart = verbs.add_parser(
        "quickstart", help="embedded broker + a standalone worker moving generated records to a file, until Ctrl-C")
    quickstart.add_argument("--port", type=int, default=0, help="broker port (default: any free port)")
    quickstart.add_argument("--dir", default=None, help="where the output and offsets go (default: a new temporary directory)")
    quickstart.add_argument("--duration", type=float, default=None, metavar="SECONDS",
                            help="stop by itself after this long (default: run until Ctrl-C)")
    topics = verbs.add_parser("topics", help="a Connect cluster's internal topics")
    topic_verbs = topics.add_subparsers(dest="topics_verb", metavar="ACTION")
    topic_verbs.required = True
    orphans = topic_verbs.add_parser(
        "orphans", help="offsets topics no connector of the cluster uses (topic, then the connectors in it)")
    orphans.add_argument("worker_config", metavar="WORKER_FILE", help="the cluster's connect-distributed.properties")
    orphans.add_argument("--delete", action="store_true", help="delete them, saying which")
    orphans.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                         help="for reading each topic and for the deletions (default 60)")
    _connectors_parser(verbs)
    return parser


def _cluster_parser(verbs: Any, access: argparse.ArgumentParser) -> None:
    cluster = verbs.add_parser("cluster", help="run a host's workers as the cluster's capacity policy decides")
    cluster_verbs = cluster.add_subparsers(dest="cluster_verb", metavar="ACTION")
    cluster_verbs.required = True
    run = cluster_verbs.add_parser(
        "run", parents=[access],
        help="start this host's workers of WORKER_FILE (capacity.provider=processes) as child processes, start "
             "and stop them as the leader decides, restart one that crashed; Ctrl-C or SIGTERM stops them all")
    run.add_argument("worker_config", metavar="WORKER_FILE")


def _connectors_parser(verbs: Any) -> None:
    access = argparse.ArgumentParser(add_help=False)  # how the REST API is reached
    access.add_argument("--user", default=None, help="HTTP Basic user; the password comes from $CONNECTD_PASSWORD")
    access.add_argument("--insecure", action="store_true", help="https: accept any certificate")
    access.add_argument("--cacert", default=None, metavar="FILE", help="https: trust the CAs in this PEM file")
    access.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                        help="wait this long for each answer (default 60)")
    server = argparse.ArgumentParser(add_help=False, parents=[access])
    server.add_argument("--url", default=os.environ.get("CONNECTD_URL") or DEFAULT_URL, type=_rest_url,
                        help=f"the worker's REST API (default $CONNECTD_URL or {DEFAULT_URL})")

    status = verbs.add_parser("status", parents=[server],
                              help="workers, connectors and tasks: state, worker, records/s, first line of any error")
    status.add_argument("--watch", action="store_true", help="redraw every --interval seconds until Ctrl-C")
    status.add_argument("--interval", type=float, default=2.0, metavar="SECONDS",
                        help="how long records/s is measured over, and how often --watch redraws (default 2)")

    _cluster_parser(verbs, access)
    connectors = verbs.add_parser("connectors", help="manage the connectors of a running worker over its REST API")
    actions = connectors.add_subparsers(dest="connectors_verb", metavar="ACTION")
    actions.required = True
    listing = actions.add_parser("list", parents=[server], help="the connectors' names, or their status/info")
    listing.add_argument("--expand", action="append", choices=("status", "info"), default=[],
                         help="a map name -> status and/or info instead of names (repeatable)")
    create = actions.add_parser("create", parents=[server], help="create a connector from a file")
    create.add_argument("file", metavar="FILE",
                        help="a .properties connector file, or the JSON body of POST /connectors")
    for action, text in (("delete", "stop a connector's tasks and forget it"),
                         ("status", "the state of a connector and of each task"),
                         ("pause", "PAUSED: tasks stay up but read nothing new"),
                         ("resume", "back to RUNNING from PAUSED or STOPPED"),
                         ("stop", "STOPPED: tasks shut down, config kept, offsets editable")):
        actions.add_parser(action, parents=[server], help=text).add_argument("name", metavar="NAME")
    restart = actions.add_parser("restart", parents=[server], help="restart a connector and, optionally, its tasks")
    restart.add_argument("name", metavar="NAME")
    restart.add_argument("--include-tasks", action="store_true", help="restart its tasks too")
    restart.add_argument("--only-failed", action="store_true", help="restart only what is FAILED")
    offsets = actions.add_parser("offsets", parents=[server],
                                 help="a connector's offsets; --reset or --set change them while it is STOPPED")
    offsets.add_argument("name", metavar="NAME")
    change = offsets.add_mutually_exclusive_group()
    change.add_argument("--reset", action="store_true", help="forget every offset")
    change.add_argument("--set", metavar="FILE", dest="set_file",
                        help='set offsets from a JSON file: {"offsets": [{"partition": {...}, "offset": {...}}]}')


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the process's exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    out = sys.stdout
    try:
        # A worker logs to stdout, as Kafka Connect does; a command whose output is its answer
        # (plugins, config check, topics orphans, connectors …) keeps its log lines on stderr.
        worker = args.verb in ("standalone", "distributed", "quickstart", "broker", "cluster")
        configure_logging(args.log_level, stream=None if worker else sys.stderr)
        return _dispatch(args, out)
    except ConfigError as exc:
        _print_error(exc, out=sys.stderr)
        return EXIT_CONFIG
    except NotYetAvailableError as exc:
        print(f"connectd: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ConnectdError as exc:
        _print_error(exc, out=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`connectd plugins | head`): not an error.
        # Point stdout at /dev/null so the interpreter's final flush is quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except Exception as exc:  # a bug: say what, keep the trace, hide secrets
        print(redact("".join(traceback.format_exception(exc))), file=sys.stderr, end="")
        return EXIT_FAILURE


def _print_error(exc: Exception, out: TextIO) -> None:
    for line in str(exc).splitlines() or [type(exc).__name__]:
        print(redact(f"connectd: {line}"), file=out)


def _dispatch(args: argparse.Namespace, out: TextIO) -> int:
    if args.verb == "plugins":
        return _plugins(args.json, out)
    if args.verb == "config" and args.config_verb == "check":
        return _config_check(args.file, args.mode, args.policy, out)
    if args.verb == "config" and args.config_verb == "docs":
        return _config_docs(args.output, out)
    if args.verb == "broker":
        return _broker(args.port, args.storage, out)
    if args.verb == "quickstart":
        return _quickstart(args.port, args.dir, args.duration, out)
    if args.verb in ("distributed", "standalone"):
        return _run_worker(args.verb, args.worker_config, getattr(args, "connector_configs", ()))
    if args.verb == "connectors":
        return _connectors(args, out)
    if args.verb == "status":
        return _status(args, out)
    if args.verb == "cluster" and args.cluster_verb == "run":
        return _cluster_run(args)
    if args.verb == "topics" and args.topics_verb == "orphans":
        return _orphan_topics(args.worker_config, args.delete, args.timeout, out)
    raise AssertionError(f"unhandled verb {args.verb}")  # argparse only lets known verbs through


def _plugins(as_json: bool, out: TextIO) -> int:
    infos = sorted(get_registry(), key=lambda i: (i.kind, i.name))
    if as_json:
        json.dump([info.as_dict() for info in infos], out, indent=2)
        out.write("\n")
        return EXIT_OK
    rows = [("NAME", "KIND", "VERSION", "PACKAGE", "ALIASES")]
    rows += [(i.name, i.kind, i.version, i.package, ", ".join(i.aliases)) for i in infos]
    widths = [max(len(row[c]) for row in rows) for c in range(4)]
    for row in rows:
        print("  ".join(cell.ljust(widths[c]) for c, cell in enumerate(row[:4])) + "  " + row[4], file=out)
    return EXIT_OK


def _config_check(file: str, mode: str, policy: str | None, out: TextIO) -> int:
    config = WorkerConfig.from_file(file, None if mode == "auto" else mode)
    problems = config.problems()
    if policy == "msk":
        problems += msk_problems(config.originals(), config.origin, source=file)
        problems.sort(key=lambda p: (not p.is_error, p.origin.line or 0 if p.origin else 0))
    for problem in problems:
        print(problem, file=out)
    errors = sum(1 for p in problems if p.is_error)
    warnings = len(problems) - errors
    summary = f"{file}: {config.mode} worker config"
    if errors:
        print(f"{summary}: {errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)}", file=out)
        return EXIT_CONFIG
    print(f"{summary}: ok" + (f" ({warnings} warning{'s' * (warnings != 1)})" if warnings else ""), file=out)
    return EXIT_OK


def _config_docs(output: str | None, out: TextIO) -> int:
    if output == "-":
        out.write(render_reference())
        return EXIT_OK
    pages = {Path(output or DEFAULT_PATH): render_reference()}
    if output is None:
        pages[Path(PLUGINS_PATH)] = render_plugin_reference(get_registry())
    for path, text in pages.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}", file=out)
    return EXIT_OK


def _broker(port: int, storage: str, out: TextIO) -> int:
    def ready(broker: object) -> None:
        print(f"broker listening on {broker.bootstrap_servers} (storage {storage}); Ctrl-C stops it",  # type: ignore[attr-defined]
              file=out, flush=True)

    return run_broker(port, storage=storage, on_ready=ready)


def _run_worker(mode: str, file: str, connector_files: Sequence[str] = ()) -> int:
    config = WorkerConfig.from_file(file, mode)
    registry = get_registry()
    config.check(registry)
    connectors = _checked_connector_files(config, registry, connector_files)
    # lazy: pyspark and aiohttp (~1 s) only for the verbs that run a worker
    from connectd.worker import Worker

    with OutputScrubber():  # Spark's JVM and Python workers write to our stdout and stderr too
        asyncio.run(Worker(config, registry=registry).serve(connectors))
    return EXIT_OK


def _cluster_run(args: argparse.Namespace) -> int:
    """``connectd cluster run``: the ``processes`` capacity provider's supervisor, until SIGTERM or Ctrl-C."""
    import threading

    # lazy: only this verb supervises workers
    from connectd.capacity.processes import Supervisor

    config = WorkerConfig.from_file(args.worker_config, "distributed")
    config.check(get_registry())
    password = os.environ.get("CONNECTD_PASSWORD")
    if args.user is not None and password is None:
        raise ConfigError(["--user needs the password in $CONNECTD_PASSWORD"])
    supervisor = Supervisor(args.worker_config, config, lambda url: Client(
        url, user=args.user, password=password, insecure=args.insecure, cacert=args.cacert, timeout=args.timeout))
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    return supervisor.run(stop)


def _checked_connector_files(config: Any, registry: Any, files: Sequence[str]) -> list[tuple[dict[str, str], Any]]:
    """Every connector file read and checked as a create request would be, before anything
    starts: one ConfigError listing the problems of all of them."""
    # lazy: the herder imports pyspark (~0.5 s)
    from connectd.herder import check_connector, load_connector_file

    connectors, problems, names = [], [], {}
    for path in files:
        try:
            connector, origin = load_connector_file(path)
            check_connector(connector, registry, origin, config.providers.resolve,
                            config.get("connector.client.config.override.policy"),
                            config.get("topic.creation.enable"))
        except ConfigError as exc:
            problems.extend(exc.problems)
            continue
        name = connector["name"].strip()
        if name in names:
            problems.append(f"{path}: connector {name} is also defined in {names[name]}")
        names[name] = path
        connectors.append((connector, origin))
    if problems:
        raise ConfigError(problems)
    return connectors


def _quickstart(port: int, directory: str | None, duration: float | None, out: TextIO) -> int:
    # lazy: confluent_kafka only for the verbs that talk to Kafka
    from confluent_kafka.admin import AdminClient, NewTopic

    workdir = Path(directory or tempfile.mkdtemp(prefix="connectd-quickstart-")).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    output = workdir / "users.jsonl"
    topic = "quickstart-users"
    with EmbeddedBroker(port=port) as broker:
        print(f"embedded broker up on {broker.bootstrap_servers}", file=out, flush=True)
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(timeout=30)
        del admin  # destroyed now, not after the broker stopped (it would log connection failures)
        worker = WorkerConfig(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "key.converter": "org.apache.kafka.connect.storage.StringConverter",
                "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                "value.converter.schemas.enable": "false",
                "offset.storage.file.filename": str(workdir / "connect.offsets"),
                "listeners": "http://127.0.0.1:0",  # any free port: printed below
                "spark.master": "local[2]",
                "spark.sql.shuffle.partitions": "2",
            },
            "standalone",
            source="quickstart",
        )
        connectors = [
            ({"name": "quickstart-datagen", "connector.class": "DatagenConnector", "kafka.topic": topic,
              "quickstart": "users", "max.interval": "5", "tasks.max": "1"}, lambda key: None),
            # The sink reads values as text, so each line is the JSON as it is in Kafka.
            ({"name": "quickstart-file-sink", "connector.class": "FileStreamSink", "topics": topic,
              "file": str(output), "value.converter": "org.apache.kafka.connect.storage.StringConverter"},
             lambda key: None),
        ]
        print(f"starting a standalone worker (Spark takes a few seconds): datagen -> {topic} -> {output}",
              file=out, flush=True)
        with OutputScrubber():
            asyncio.run(_quickstart_serve(worker, connectors, output, duration, out))
    print(f"broker and worker stopped; the records are in {output}", file=out, flush=True)
    return EXIT_OK


async def _quickstart_serve(worker: Any, connectors: list, output: Path, duration: float | None, out: TextIO) -> None:
    progress: list[asyncio.Task[None]] = []

    async def report(started: float) -> None:
        moved_before, then = 0, started
        while True:
            await asyncio.sleep(2)
            now = asyncio.get_running_loop().time()
            moved = _count_lines(output)
            rate = (moved - moved_before) / (now - then)
            print(f"records moved: {moved:,} ({rate:,.0f}/s) -> {output}", file=out, flush=True)
            moved_before, then = moved, now
            if duration is not None and now - started >= duration:
                os.kill(os.getpid(), signal.SIGTERM)
                return

    def up(worker: Any) -> None:
        print(f"worker is up, REST API on {worker.rest_url} (try {worker.rest_url}/connectors?expand=status); "
              "Ctrl-C stops everything", file=out, flush=True)
        progress.append(asyncio.get_running_loop().create_task(report(asyncio.get_running_loop().time())))

    from connectd.worker import Worker  # lazy: as in _run_worker

    try:
        await Worker(worker).serve(connectors, on_up=up)
    finally:
        for task in progress:
            task.cancel()


def _count_lines(path: Path) -> int:
    try:
        with open(path, "rb") as handle:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))
    except FileNotFoundError:
        return 0


def _orphan_topics(file: str, delete: bool, timeout: float, out: TextIO) -> int:
    # lazy: confluent_kafka and the offsets room (~110 ms) only for this verb
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    from connectd.runtime.offsets.orphans import orphan_offset_topics

    config = WorkerConfig.from_file(file, "distributed")
    missing = [key for key in ("offset.storage.topic", "config.storage.topic") if not config.resolved(key)]
    if missing:
        raise ConfigError([f"{file}: {key} is required" for key in missing])
    admin = AdminClient(config.client_config("admin", "confluent"))
    try:
        topics = admin.list_topics(timeout=timeout).topics
    except KafkaException as exc:
        raise ConnectorError(f"cannot list the topics of {','.join(config.get('bootstrap.servers'))}: {exc}") from exc
    orphans = orphan_offset_topics(config.client_config("consumer", "confluent"), topics,
                                   config.resolved("offset.storage.topic") or "",
                                   config.resolved("config.storage.topic") or "", timeout)
    if not orphans:
        print("no orphaned offsets topics", file=sys.stderr)
        return EXIT_OK
    if not delete:
        for topic, connectors in orphans.items():
            print(f"{topic}\t{','.join(connectors)}", file=out)
        return EXIT_OK
    failed = []
    for topic, future in admin.delete_topics(list(orphans), operation_timeout=timeout).items():
        try:
            future.result(timeout=timeout)
            print(f"deleted {topic}\t{','.join(orphans[topic])}", file=out, flush=True)
        except (KafkaException, TimeoutError) as exc:  # each topic's outcome said, then one error for all
            failed.append(f"{topic}: {exc}")
    if failed:
        raise ConnectorError("not deleted: " + "; ".join(failed))
    return EXIT_OK


def _rest_url(text: str) -> str:
    parts = urllib.parse.urlsplit(text.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(f"expected http://host:port or https://host:port, not {text!r}")
    return text.strip()


def _client(args: argparse.Namespace, url: str | None = None) -> Any:
    """A REST client for the worker at *url* (by default ``--url``), with the command's credentials.

    :returns: ``None`` when ``--user`` has no password and none can be asked for.
    """
    password = os.environ.get("CONNECTD_PASSWORD")
    if args.user is not None and password is None:
        if not sys.stdin.isatty():
            print("connectd: --user needs the password in $CONNECTD_PASSWORD", file=sys.stderr)
            return None
        password = getpass.getpass(f"password for {args.user} at {args.url}: ")
        os.environ["CONNECTD_PASSWORD"] = password  # asked once, for every worker of the cluster
    return Client(url or args.url, user=args.user, password=password, insecure=args.insecure, cacert=args.cacert,
                  timeout=args.timeout)


def _status(args: argparse.Namespace, out: TextIO) -> int:
    """``connectd status``: one table (records/s measured over --interval), or redrawn with --watch."""
    # lazy: rich's tables and prometheus' parser (~30 ms) for this verb only
    from rich.console import Console

    from connectd.cli_status import look, render

    client = _client(args)
    if client is None:
        return EXIT_USAGE
    scheme = urllib.parse.urlsplit(client.url).scheme
    workers: dict[str, Any] = {}

    def metrics(worker: str) -> str:
        if worker not in workers:
            workers[worker] = _client(args, f"{scheme}://{worker}")
        return workers[worker].text("/metrics")

    def connectors() -> Any:
        return client.connectors(expand=["status", "info"])

    def capacity() -> Any:
        return client.request("GET", "/capacity/status")

    console = Console(file=out, width=None if out.isatty() else 160)
    _, counted = look(connectors, metrics)
    time.sleep(args.interval)
    snapshot, counted = look(connectors, metrics, counted, capacity)
    if not args.watch:
        console.print(render(snapshot, client.url))
        return EXIT_OK
    from rich.live import Live  # lazy: --watch only

    with Live(render(snapshot, client.url), console=console, auto_refresh=False) as live:
        while True:
            time.sleep(args.interval)
            snapshot, counted = look(connectors, metrics, counted, capacity)
            live.update(render(snapshot, client.url), refresh=True)


def _connectors(args: argparse.Namespace, out: TextIO) -> int:
    client = _client(args)
    if client is None:
        return EXIT_USAGE
    action = args.connectors_verb
    if action == "list":
        answer = client.connectors(expand=list(dict.fromkeys(args.expand)))
    elif action == "create":
        answer = client.create(_create_request(args.file))
    elif action == "restart":
        answer = client.restart(args.name, include_tasks=args.include_tasks, only_failed=args.only_failed)
    elif action == "offsets" and args.reset:
        answer = client.reset_offsets(args.name)
    elif action == "offsets" and args.set_file is not None:
        answer = client.alter_offsets(args.name, _json_file(args.set_file))
    elif action == "offsets":
        answer = client.offsets(args.name)
    else:  # delete, status, pause, resume, stop: one name, no options
        answer = getattr(client, action)(args.name)
    if answer is not None:
        json.dump(answer, out, indent=2)
        out.write("\n")
    return EXIT_OK


def _create_request(file: str) -> dict[str, Any]:
    """The body of ``POST /connectors`` for a connector file (``initial_state`` kept from a JSON body)."""
    # lazy: as in _checked_connector_files
    from connectd.herder import load_connector_file

    config, _ = load_connector_file(file)
    name = (config.get("name") or "").strip()
    if not name:
        raise ConfigError([f"{file}: name is required"])
    body: dict[str, Any] = {"name": name, "config": config}
    if Path(file).suffix.lower() == ".json":
        document = _json_file(file)
        if "config" in document and document.get("initial_state") is not None:
            body["initial_state"] = document["initial_state"]
    return body


def _json_file(file: str) -> dict[str, Any]:
    try:
        document = json.loads(Path(file).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError([f"{file}: cannot read: {exc.strerror or exc}"]) from exc
    except ValueError as exc:
        raise ConfigError([f"{file}: not JSON: {exc}"]) from exc
    if not isinstance(document, dict):
        raise ConfigError([f"{file}: expected a JSON object"])
    return document


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
