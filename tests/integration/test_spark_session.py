"""The worker's spark.* settings reach a real SparkSession."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.integration


def test_session_is_built_from_the_worker_config(spark):
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.master") == "local[2]"
    assert conf.get("spark.driver.host") == "127.0.0.1"
    assert conf.get("spark.driver.bindAddress") == "127.0.0.1"
    assert conf.get("spark.scheduler.mode") == "FIFO"
    assert conf.get("spark.sql.shuffle.partitions") == "2"  # pass-through of any spark.* key


def test_the_driver_jvm_starts_with_connectds_log_settings_then_the_worker_configs_java_options(spark):
    arguments = list(spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    options = spark.sparkContext.getConf().get("spark.driver.extraJavaOptions").split()
    # Spark puts its own first; connectd's log settings, then the worker config's (conftest sets them)
    ours = options[[o.startswith("-Dlog4j2.configurationFile=") for o in options].index(True):]
    assert ours[1:] == ["-XX:TieredStopAtLevel=1", "-XX:CICompilerCount=1", "-XX:+UseSerialGC"]
    assert arguments[arguments.index(ours[0]):][:len(ours)] == ours


def test_session_runs_a_job(spark):
    assert spark.range(1000).selectExpr("sum(id) AS total").collect()[0]["total"] == 499500


def test_the_warnings_about_what_connectd_does_by_design_are_silenced(spark):
    from connectd.runtime.spark.session import QUIET_LOGGERS

    log4j = spark._jvm.org.apache.logging.log4j
    for name in QUIET_LOGGERS:
        assert str(log4j.LogManager.getLogger(name).getLevel()) == "ERROR"
        # the class is still where Spark keeps it (a rename would silently bring the warning back)
        assert spark._jvm.java.lang.Class.forName(name) is not None


def test_the_warm_up_runs_one_row_through_a_python_data_source_and_leaves_nothing_behind(spark, caplog):
    import glob
    import tempfile

    from connectd.runtime.spark.warm_up import warm_up

    leftovers = set(glob.glob(f"{tempfile.gettempdir()}/connectd-warm-up-*"))
    with caplog.at_level("INFO", logger="connectd.runtime.spark.warm_up"):
        assert warm_up(spark, timeout_s=120) is True
    (event,) = [r.msg for r in caplog.records if isinstance(r.msg, dict) and r.msg.get("event") == "spark_warmed_up"]
    assert event["rows"] == 1  # the row went through an executor's Python worker
    assert spark.streams.active == []
    assert set(glob.glob(f"{tempfile.gettempdir()}/connectd-warm-up-*")) == leftovers


def test_a_warm_up_out_of_time_is_stopped_and_the_worker_goes_on(spark, caplog):
    from connectd.runtime.spark.warm_up import warm_up

    with caplog.at_level("WARNING", logger="connectd.runtime.spark.warm_up"):
        assert warm_up(spark, timeout_s=0.001) is False
    assert "spark_warm_up_timed_out" in caplog.text
    assert spark.streams.active == []


def test_more_busy_queries_than_cores_all_make_progress(spark, wait_until):
    """Five queries whose every micro-batch holds a core for a while, on the session's 2 cores, each
    started as a task's query is (connectd.runtime.spark.queries): every one gets batches. Under
    Spark's FAIR scheduler with a pool per query (connectd's default before), a core that frees
    goes to the waiting pool whose name sorts first: the last-named query got 1 batch in 90 s where
    the first got 74 (a task RUNNING that moved nothing, found with three exactly-once sources on a
    1-core worker)."""
    import time

    from pyspark.sql import functions

    from connectd.runtime.spark.queries import _start

    @functions.udf("long")
    def hold_a_core(value):
        time.sleep(0.05)  # per row: a batch holds its core the longer, the longer it waited
        return value

    def build(name):
        def start(workdir):
            frame = (spark.readStream.format("rate").option("rowsPerSecond", 10).option("numPartitions", 1).load()
                     .select(hold_a_core("value").alias("value")))
            return (frame.writeStream.format("noop").queryName(name).trigger(processingTime="10 milliseconds")
                    .option("checkpointLocation", str(workdir / "checkpoint")).start())
        return start

    queries = [_start(spark, name, build(name)) for name in ("a-0", "b-0", "c-0", "d-0", "e-0")]
    try:
        batches = wait_until(lambda: {q.name: len(q.query.recentProgress) for q in queries},
                             "every query's batches", until=lambda seen: min(seen.values()) >= 5, timeout=60)
    finally:
        for each in queries:
            each.query.stop()
            each.discard()
    assert min(batches.values()) >= 5, batches


def test_sparks_python_workers_import_pyspark_from_its_installed_package(spark):
    """Not from $SPARK_HOME/python/lib/pyspark.zip, which each new process compiled again (connectd-spark-python)."""
    seen = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("pyspark").__file__).collect()
    assert seen == [__import__("pyspark").__file__] and ".zip" not in seen[0]
