//! What a source database of its own says of its replication (see `store/replica.rs`): a
//! PostgreSQL standby's replay lag, a MySQL/MariaDB replica's `Seconds_Behind_Source`.

use sqlx::mysql::MySqlRow;
use sqlx::{MySql, Postgres, Row};

use super::super::replica::{LagReading, SourceRole};
use super::super::StoreError;
use super::Sql;

/// A standby's role, and how far behind its primary it is: nothing when it has replayed all
/// it received and is receiving, else the age of the last transaction it replayed (which also
/// grows while the primary is idle and the standby disconnected).
const POSTGRES_LAG: &str = "SELECT pg_is_in_recovery() AS standby, \
     CASE WHEN NOT pg_is_in_recovery() THEN 0::float8 \
          WHEN pg_last_wal_receive_lsn() IS NOT NULL \
               AND pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0::float8 \
          ELSE EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp())::float8 END AS lag";

impl Sql<Postgres> {
    pub(in crate::store) async fn replica_lag(&self) -> Result<LagReading, StoreError> {
        let row = sqlx::query(POSTGRES_LAG).fetch_one(&self.pool).await?;
        let standby: bool = row.try_get("standby")?;
        let lag: Option<f64> = row.try_get("lag")?;
        Ok(LagReading {
            role: match standby {
                true => SourceRole::Standby,
                false => SourceRole::Primary,
            },
            lag_seconds: lag.map(|secs| secs.max(0.0)),
        })
    }
}

impl Sql<MySql> {
    /// `SHOW REPLICA STATUS` (MySQL 8.0.22+, MariaDB 10.5.1+), else `SHOW SLAVE STATUS`: no
    /// row on a server that replicates nothing; a NULL lag while replication is stopped. Needs
    /// the REPLICATION CLIENT privilege (MariaDB: REPLICA MONITOR or SLAVE MONITOR).
    pub(in crate::store) async fn replica_lag(&self) -> Result<LagReading, StoreError> {
        let rows = match sqlx::raw_sql("SHOW REPLICA STATUS")
            .fetch_all(&self.pool)
            .await
        {
            Ok(rows) => rows,
            Err(_) => {
                sqlx::raw_sql("SHOW SLAVE STATUS")
                    .fetch_all(&self.pool)
                    .await?
            }
        };
        let Some(row) = rows.first() else {
            return Ok(LagReading {
                role: SourceRole::Primary,
                lag_seconds: Some(0.0),
            });
        };
        Ok(LagReading {
            role: SourceRole::Replica,
            lag_seconds: seconds_behind(row),
        })
    }
}

/// `Seconds_Behind_Source` (MySQL) or `Seconds_Behind_Master` (MariaDB, older MySQL), in
/// whichever integer or text type the server sends it.
fn seconds_behind(row: &MySqlRow) -> Option<f64> {
    ["Seconds_Behind_Source", "Seconds_Behind_Master"]
        .iter()
        .find_map(|column| {
            let unsigned = row.try_get::<Option<u64>, _>(*column).ok().flatten();
            let signed = || row.try_get::<Option<i64>, _>(*column).ok().flatten();
            let text = || {
                row.try_get::<Option<String>, _>(*column)
                    .ok()
                    .flatten()
                    .and_then(|t| t.parse::<u64>().ok())
            };
            unsigned
                .or_else(|| signed().map(|n| n.max(0) as u64))
                .or_else(text)
                .map(|n| n as f64)
        })
}
