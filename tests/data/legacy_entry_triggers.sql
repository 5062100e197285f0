-- The entry stream's triggers as schema/sqlite/007_entry_metadata.sql created them
-- before the application attached its streams with AttachStream (src/app/schema.h).
-- Databases created then keep these; stream_change_feed_test checks they write the same
-- records as the attached ones.

-- NULL columns are left out of the images (json_patch drops null members), as
-- DynamoDB leaves out attributes that are not present.
CREATE TRIGGER IF NOT EXISTS stream_entry_insert AFTER INSERT ON entry
BEGIN
  INSERT INTO stream_shard (stream, shard, last_sequence)
  VALUES ('entry', sheetlog_hash(NEW.sheet_id, NEW.segment) %
                   (SELECT shard_count FROM stream_config WHERE stream = 'entry'), 1)
  ON CONFLICT (stream, shard) DO UPDATE SET last_sequence = last_sequence + 1;
  INSERT INTO stream_record (stream, shard, sequence, event_name, keys, new_image,
                             old_image, created_micros)
  SELECT 'entry', s.shard, s.last_sequence, 'INSERT',
         json_patch('{}', json_object('sheet_id', NEW.sheet_id, 'segment', NEW.segment,
                                      'num', NEW.num)),
         json_patch('{}', json_object('sheet_id', NEW.sheet_id, 'segment', NEW.segment,
                                      'num', NEW.num, 'seq', NEW.seq,
                                      'created', NEW.created, 'external', NEW.external,
                                      'type', NEW.type, 'version', NEW.version,
                                      'body', NEW.body,
                                      'snapshot_root', NEW.snapshot_root,
                                      'metadata', NEW.metadata)),
         NULL, sheetlog_now_micros()
  FROM stream_shard s
  WHERE s.stream = 'entry'
    AND s.shard = sheetlog_hash(NEW.sheet_id, NEW.segment) %
                  (SELECT shard_count FROM stream_config WHERE stream = 'entry');
END;

-- An UPDATE that changes nothing writes no record (as DynamoDB).
CREATE TRIGGER IF NOT EXISTS stream_entry_update AFTER UPDATE ON entry
WHEN OLD.sheet_id IS NOT NEW.sheet_id OR OLD.segment IS NOT NEW.segment
  OR OLD.num IS NOT NEW.num OR OLD.seq IS NOT NEW.seq OR OLD.created IS NOT NEW.created
  OR OLD.external IS NOT NEW.external OR OLD.type IS NOT NEW.type
  OR OLD.version IS NOT NEW.version OR OLD.body IS NOT NEW.body
  OR OLD.snapshot_root IS NOT NEW.snapshot_root OR OLD.metadata IS NOT NEW.metadata
BEGIN
  INSERT INTO stream_shard (stream, shard, last_sequence)
  VALUES ('entry', sheetlog_hash(NEW.sheet_id, NEW.segment) %
                   (SELECT shard_count FROM stream_config WHERE stream = 'entry'), 1)
  ON CONFLICT (stream, shard) DO UPDATE SET last_sequence = last_sequence + 1;
  INSERT INTO stream_record (stream, shard, sequence, event_name, keys, new_image,
                             old_image, created_micros)
  SELECT 'entry', s.shard, s.last_sequence, 'MODIFY',
         json_patch('{}', json_object('sheet_id', NEW.sheet_id, 'segment', NEW.segment,
                                      'num', NEW.num)),
         json_patch('{}', json_object('sheet_id', NEW.sheet_id, 'segment', NEW.segment,
                                      'num', NEW.num, 'seq', NEW.seq,
                                      'created', NEW.created, 'external', NEW.external,
                                      'type', NEW.type, 'version', NEW.version,
                                      'body', NEW.body,
                                      'snapshot_root', NEW.snapshot_root,
                                      'metadata', NEW.metadata)),
         json_patch('{}', json_object('sheet_id', OLD.sheet_id, 'segment', OLD.segment,
                                      'num', OLD.num, 'seq', OLD.seq,
                                      'created', OLD.created, 'external', OLD.external,
                                      'type', OLD.type, 'version', OLD.version,
                                      'body', OLD.body,
                                      'snapshot_root', OLD.snapshot_root,
                                      'metadata', OLD.metadata)),
         sheetlog_now_micros()
  FROM stream_shard s
  WHERE s.stream = 'entry'
    AND s.shard = sheetlog_hash(NEW.sheet_id, NEW.segment) %
                  (SELECT shard_count FROM stream_config WHERE stream = 'entry');
END;

CREATE TRIGGER IF NOT EXISTS stream_entry_delete AFTER DELETE ON entry
BEGIN
  INSERT INTO stream_shard (stream, shard, last_sequence)
  VALUES ('entry', sheetlog_hash(OLD.sheet_id, OLD.segment) %
                   (SELECT shard_count FROM stream_config WHERE stream = 'entry'), 1)
  ON CONFLICT (stream, shard) DO UPDATE SET last_sequence = last_sequence + 1;
  INSERT INTO stream_record (stream, shard, sequence, event_name, keys, new_image,
                             old_image, created_micros)
  SELECT 'entry', s.shard, s.last_sequence, 'REMOVE',
         json_patch('{}', json_object('sheet_id', OLD.sheet_id, 'segment', OLD.segment,
                                      'num', OLD.num)),
         NULL,
         json_patch('{}', json_object('sheet_id', OLD.sheet_id, 'segment', OLD.segment,
                                      'num', OLD.num, 'seq', OLD.seq,
                                      'created', OLD.created, 'external', OLD.external,
                                      'type', OLD.type, 'version', OLD.version,
                                      'body', OLD.body,
                                      'snapshot_root', OLD.snapshot_root,
                                      'metadata', OLD.metadata)),
         sheetlog_now_micros()
  FROM stream_shard s
  WHERE s.stream = 'entry'
    AND s.shard = sheetlog_hash(OLD.sheet_id, OLD.segment) %
                  (SELECT shard_count FROM stream_config WHERE stream = 'entry');
END;
