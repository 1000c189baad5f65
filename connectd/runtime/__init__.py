"""The data plane: what runs a connector's tasks, in rooms.

- ``assembly``: from a task's config to its running query and back (both herders use it);
  beside it what sources and sinks share: ``converter_choice`` (which converters a task uses), ``error_handling`` (retries,
  tolerance, the errant record reporter), ``dead_letters``, ``fencing`` (the lease a
  query's readers honour);
- ``spark/``: the session (``session``), its class archive and warm-up, the executors'
  view, and each task's query (``queries``: start, stop, pause, progress);
- ``source/``: a record-level source task as a Spark streaming source (``task``), its poller
  thread (``poller``), its batches' hand-off to executors (``handoff``), the topics it writes
  to (``active_topics``) and creates (``topic_creation``);
- ``sink/``: a sink task run over offset ranges (``task``) and its long-lived instances in
  executors' Python workers (``executor``);
- ``kafka/``: Kafka as a Spark data source and sink (``io``: the data source; ``clients``:
  the options and schemas reader and writer share; ``reading``: a micro-batch's offset ranges,
  the sink tasks' side; ``consumers``: where a batch ends and its ranges read; ``producing``:
  batches produced, the source tasks' side) and a whole topic read to its end (``topic_reader``);
- ``offsets/``: where source offsets are kept (``store``: a file or an offsets topic), a sink's
  consumer group (``groups``), offsets topics no connector uses (``orphans``).

docs/architecture.md draws how a record and a config walk through them.
"""
