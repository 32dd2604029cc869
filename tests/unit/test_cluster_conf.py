"""The local cluster's processes and the configuration folder it writes for other Spark clients, without starting
anything."""

from __future__ import annotations

import stat
import xml.etree.ElementTree as ElementTree

from entity_state import cluster


def _settings(tmp_path, monkeypatch) -> cluster.Settings:
    for name in ("ENTITY_STATE_METASTORE_PORT", "ENTITY_STATE_MASTER_PORT", "ENTITY_STATE_WORKER_UI_PORT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ENTITY_STATE_HOME", str(tmp_path))
    return cluster.Settings.from_env()


def test_the_metastore_starts_first_and_two_workers_with_ports_of_their_own(tmp_path, monkeypatch):
    settings = _settings(tmp_path, monkeypatch)
    names = [c.name for c in cluster.components(settings)]
    assert names == ["metastore", "master", "worker-1", "worker-2", "thrift"]
    ports = [port for c in cluster.components(settings) for port, _ in c.ports]
    assert len(ports) == len(set(ports))
    assert 5432 not in ports  # left to a PostgreSQL server of the machine's own


def test_the_conf_folder_points_a_spark_driver_at_the_metastore_the_warehouse_and_the_master(tmp_path, monkeypatch):
    settings = _settings(tmp_path, monkeypatch)
    cluster._write_client_conf(settings)

    hive_site = settings.conf_dir / "hive-site.xml"
    assert stat.S_IMODE(hive_site.stat().st_mode) == 0o600  # it holds the metastore's password
    hive = {p.findtext("name"): p.findtext("value") for p in ElementTree.parse(hive_site).getroot()}
    assert hive["javax.jdo.option.ConnectionURL"] == f"jdbc:postgresql://127.0.0.1:{settings.metastore_port}/metastore"
    assert hive["javax.jdo.option.ConnectionPassword"] == cluster._metastore_password(settings)
    # the schema is made whole by `up`; no client creates or changes tables of it
    assert hive["datanucleus.schema.autoCreateAll"] == "false"
    assert hive["hive.metastore.schema.verification"] == "true"

    lines = (settings.conf_dir / "spark-defaults.conf").read_text().splitlines()
    defaults = dict(line.split(" ", 1) for line in lines if line and not line.startswith("#"))
    assert defaults["spark.master"] == settings.master_url
    assert defaults["spark.sql.warehouse.dir"] == str(settings.warehouse)
    assert "postgresql.jar" in defaults["spark.driver.extraClassPath"]
    # the Thrift Server runs with the same settings, but for its own sizes
    assert {k: v for k, v in cluster._thrift_conf(settings).items() if k.startswith("spark.sql.")} == {
        k: v for k, v in defaults.items() if k.startswith("spark.sql.")
    }


def test_the_metastore_password_is_made_once(tmp_path, monkeypatch):
    settings = _settings(tmp_path, monkeypatch)
    first = cluster._metastore_password(settings)
    assert len(first) == 32 and cluster._metastore_password(settings) == first
