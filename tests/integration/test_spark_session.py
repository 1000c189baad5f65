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


def test_session_runs_a_job(spark):
    assert spark.range(1000).selectExpr("sum(id) AS total").collect()[0]["total"] == 499500


def test_the_warnings_about_what_connectd_does_by_design_are_silenced(spark):
    from connectd.runtime.spark import QUIET_LOGGERS

    log4j = spark._jvm.org.apache.logging.log4j
    for name in QUIET_LOGGERS:
        assert str(log4j.LogManager.getLogger(name).getLevel()) == "ERROR"
        # the class is still where Spark keeps it (a rename would silently bring the warning back)
        assert spark._jvm.java.lang.Class.forName(name) is not None
