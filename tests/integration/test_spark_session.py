"""The worker's spark.* settings reach a real SparkSession."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.integration


def test_session_is_built_from_the_worker_config(spark):
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.master") == "local[2]"
    assert conf.get("spark.driver.host") == "127.0.0.1"
    assert conf.get("spark.driver.bindAddress") == "127.0.0.1"
    assert conf.get("spark.scheduler.mode") == "FAIR"
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
