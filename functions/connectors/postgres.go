package connectors

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/magnetar-mq/magnetar/functions/iopolicy"
	"github.com/magnetar-mq/magnetar/functions/sdk"
	"github.com/magnetar-mq/magnetar/pulsarclient"
)

func postgresSink(ctx context.Context, in *sdk.Instance, pol *iopolicy.Policy) error {
	cfg := in.Spec.UserConfig
	url, table := str(cfg, "url", ""), str(cfg, "table", "")
	if url == "" || table == "" {
		return errors.New("jdbc-postgres sink: configs.url and configs.table are required")
	}
	// Every host the connection string names must be allowed; it may name
	// no file (certificates, password file, service file) to read.
	if err := pol.CheckPostgresURL(url); err != nil {
		return fmt.Errorf("jdbc-postgres sink: configs.url: %w", err)
	}
	keyCol := str(cfg, "key", "key")
	batch, err := num(cfg, "batchSize", 200)
	if err != nil {
		return err
	}
	linger, err := num(cfg, "lingerMs", 100)
	if err != nil {
		return err
	}
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	tableID := pgx.Identifier(strings.Split(table, ".")).Sanitize()
	return in.RunBatch(ctx, batch, time.Duration(linger)*time.Millisecond, func(_ *sdk.Instance, msgs []*pulsarclient.Message) (map[int]error, error) {
		rows, rejected := decodeRows(msgs, keyCol)
		if len(rows) == 0 {
			return rejected, nil
		}
		if conn == nil || conn.IsClosed() {
			c, err := pgx.Connect(ctx, url)
			if err != nil {
				return nil, fmt.Errorf("connect: %w", err)
			}
			conn = c
		}
		err := upsert(ctx, conn, tableID, keyCol, rows)
		if err != nil {
			// Drop the connection: after a server restart it is dead.
			conn.Close(context.Background())
			conn = nil
			return nil, err
		}
		return rejected, nil
	})
}

type row struct {
	idx  int
	cols map[string]any
}

// decodeRows parses each message as a JSON object; the message key, when
// set, is the key column. Later messages of the same key win.
func decodeRows(msgs []*pulsarclient.Message, keyCol string) ([]row, map[int]error) {
	rejected := map[int]error{}
	var rows []row
	byKey := map[string]int{}
	for i, m := range msgs {
		var obj map[string]any
		dec := json.NewDecoder(bytes.NewReader(m.Payload()))
		dec.UseNumber()
		if err := dec.Decode(&obj); err != nil || obj == nil {
			rejected[i] = fmt.Errorf("message %v: not a JSON object", m.ID())
			continue
		}
		if k := m.Key(); k != "" {
			obj[keyCol] = k
		}
		kv, ok := obj[keyCol]
		if !ok || kv == nil {
			rejected[i] = fmt.Errorf("message %v: no key (message key or field %q)", m.ID(), keyCol)
			continue
		}
		for c, v := range obj {
			switch v.(type) {
			case map[string]any, []any:
				b, _ := json.Marshal(v)
				obj[c] = string(b)
			}
		}
		ks := fmt.Sprint(kv)
		if j, dup := byKey[ks]; dup {
			rows[j].cols = obj
			continue
		}
		byKey[ks] = len(rows)
		rows = append(rows, row{idx: i, cols: obj})
	}
	return rows, rejected
}

func upsert(ctx context.Context, conn *pgx.Conn, table, keyCol string, rows []row) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.Background())
	var b pgx.Batch
	for _, r := range rows {
		cols := make([]string, 0, len(r.cols))
		for c := range r.cols {
			cols = append(cols, c)
		}
		sort.Strings(cols)
		var names, ph, sets []string
		args := make([]any, 0, len(cols))
		for i, c := range cols {
			id := pgx.Identifier{c}.Sanitize()
			names = append(names, id)
			ph = append(ph, fmt.Sprintf("$%d", i+1))
			if c != keyCol {
				sets = append(sets, id+" = EXCLUDED."+id)
			}
			v := r.cols[c]
			if v != nil {
				v = fmt.Sprint(v)
			}
			args = append(args, v)
		}
		q := fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s) ON CONFLICT (%s) DO ", table, strings.Join(names, ", "),
			strings.Join(ph, ", "), pgx.Identifier{keyCol}.Sanitize())
		if len(sets) == 0 {
			q += "NOTHING"
		} else {
			q += "UPDATE SET " + strings.Join(sets, ", ")
		}
		b.Queue(q, args...)
	}
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
