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
