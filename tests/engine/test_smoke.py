from datetime import UTC, datetime


def test_first_pass_fires_latest_fire(client, conn):
    client.periodic("every-minute", "* * * * *", "demo.tick")
    client.sync()
    conn.execute("UPDATE awa.cron_jobs SET created_at = '2025-01-01T00:00:00Z'")
    result = client.evaluate(now=datetime(2025, 1, 1, 0, 0, 30, tzinfo=UTC))
    assert [j.fire_time for j in result.jobs] == ["2025-01-01T00:00:00Z"]
