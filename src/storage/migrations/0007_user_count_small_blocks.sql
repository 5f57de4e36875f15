-- user_counts holds only derived data: empty it, key it by level and block before status (one
-- index range, in block order, then serves one status or both), and count the users again at
-- every level (block = id >> bits of the level, USER_COUNT_LEVEL_BITS in schema.ts: 128 ids,
-- 32 of those, 32 of those, 32 of those, then the whole workspace; slot = id % 4 as the
-- service spreads them), in key order.
DELETE FROM "user_counts";--> statement-breakpoint
ALTER TABLE "user_counts" DROP CONSTRAINT "user_counts__pk";
--> statement-breakpoint
ALTER TABLE "user_counts" ADD CONSTRAINT "user_counts__pk" PRIMARY KEY("workspace_id","level","block","status","slot");--> statement-breakpoint
INSERT INTO "user_counts" ("workspace_id", "status", "level", "block", "slot", "user_count")
SELECT u."workspace_id", u."status", l."level", u."id" >> l."bits", (u."id" % 4)::smallint, count(*)
FROM "users" u CROSS JOIN (VALUES (0::smallint, 7), (1::smallint, 12), (2::smallint, 17), (3::smallint, 22), (4::smallint, 63)) AS l("level", "bits")
GROUP BY u."workspace_id", l."level", u."id" >> l."bits", u."status", (u."id" % 4)::smallint
ORDER BY u."workspace_id", l."level", u."id" >> l."bits", u."status", (u."id" % 4)::smallint;
--> statement-breakpoint
-- The ids of one page of a workspace's users with status `p_status` (all users when null), by
-- id, each with the exact total (one row with a null id when the page is empty), from the
-- levels of user_counts (storage/users.queries.ts, findPage). The page is read from the nearer
-- end of the listing. A page starting fewer than `p_direct_rows` rows from that end is walked
-- to from it, as OFFSET would. A deeper one goes down the levels to the 128-id block holding
-- its first row (its last, read from the end): at each level one short statement reads the
-- blocks of the parent in key order from the parent's nearer end, a running sum stopping at
-- the block holding that row (so at most 16 blocks of 32, a few index entries each); then that
-- row's id is found by walking at most 64 index entries from the nearer end of its block, and
-- the page is read from it. A function so that PostgreSQL plans these short statements once
-- per session instead of planning one long statement on every call; a loop of indexed
-- statements rather than one recursive statement so that each level stops early.
CREATE OR REPLACE FUNCTION "user_page_ids"(p_workspace_id bigint, p_status text, p_offset bigint, p_page_size bigint, p_direct_rows bigint)
RETURNS TABLE ("total" bigint, "id" bigint) LANGUAGE plpgsql STABLE ROWS 100
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  -- USER_COUNT_LEVEL_BITS; the total is level 4 (a literal, so that the planner sees it).
  c_bits constant int[] := ARRAY[7, 12, 17, 22, 63];
  v_total bigint;
  v_forward boolean;
  v_rank bigint;
  v_take bigint;
  v_low bigint := 0;
  v_high bigint := 9223372036854775807;
  -- Going down: the block holding the anchor row (the page's first row, or its last when read
  -- from the end), the rows of that block, and the anchor's position among them by id.
  v_block bigint := 0;
  v_count bigint;
  v_pos bigint;
  v_shift int;
  v_anchor bigint;
  v_statuses text[] := CASE WHEN p_status IS NULL THEN ARRAY['active', 'deactivated'] ELSE ARRAY[p_status] END;
BEGIN
  SELECT coalesce(sum(c.user_count), 0)::int8 INTO v_total FROM user_counts c
  WHERE c.workspace_id = p_workspace_id AND c.status = ANY (v_statuses) AND c.level = 4;
  v_forward := 2 * p_offset + p_page_size <= v_total;
  v_rank := CASE WHEN v_forward THEN p_offset ELSE greatest(v_total - p_offset - p_page_size, 0) END;
  v_take := greatest(least(p_page_size, v_total - p_offset), 0);
  IF v_take > 0 AND v_rank >= p_direct_rows THEN
    v_pos := CASE WHEN v_forward THEN v_rank ELSE v_total - 1 - v_rank END;
    v_count := v_total;
    -- At each level the blocks of the parent are read from its nearer end: in the first half
    -- by ascending block with a running sum of rows before; else by descending block with a
    -- running sum of rows after (the position from the end, turned back into one from the start).
    FOR v_level IN REVERSE 3..0 LOOP
      v_shift := c_bits[v_level + 2] - c_bits[v_level + 1];
      IF 2 * v_pos < v_count THEN
        SELECT b.block, v_pos - b.before, b.n INTO v_block, v_pos, v_count FROM (
          SELECT g.block, g.n, (sum(g.n) OVER (ORDER BY g.block))::int8 - g.n AS before FROM (
            SELECT c.block, sum(c.user_count)::int8 AS n FROM user_counts c
              WHERE c.workspace_id = p_workspace_id AND c.level = v_level
                AND c.block BETWEEN v_block << v_shift AND ((v_block + 1) << v_shift) - 1 AND c.status = ANY (v_statuses)
              GROUP BY c.block ORDER BY c.block
          ) g
        ) b WHERE v_pos < b.before + b.n LIMIT 1;
      ELSE
        SELECT b.block, b.n - 1 - ((v_count - 1 - v_pos) - b.before), b.n INTO v_block, v_pos, v_count FROM (
          SELECT g.block, g.n, (sum(g.n) OVER (ORDER BY g.block DESC))::int8 - g.n AS before FROM (
            SELECT c.block, sum(c.user_count)::int8 AS n FROM user_counts c
              WHERE c.workspace_id = p_workspace_id AND c.level = v_level
                AND c.block BETWEEN v_block << v_shift AND ((v_block + 1) << v_shift) - 1 AND c.status = ANY (v_statuses)
              GROUP BY c.block ORDER BY c.block DESC
          ) g
        ) b WHERE v_count - 1 - v_pos < b.before + b.n LIMIT 1;
      END IF;
    END LOOP;
    -- The anchor's id, from the nearer end of its block; the page is then read from it.
    v_low := v_block << c_bits[1];
    v_high := (v_block + 1) << c_bits[1];
    IF 2 * v_pos < v_count THEN
      IF p_status IS NULL THEN
        SELECT u.id INTO v_anchor FROM users u WHERE u.workspace_id = p_workspace_id AND u.id >= v_low ORDER BY u.id OFFSET v_pos LIMIT 1;
      ELSE
        SELECT u.id INTO v_anchor FROM users u WHERE u.workspace_id = p_workspace_id AND u.status = p_status AND u.id >= v_low ORDER BY u.id OFFSET v_pos LIMIT 1;
      END IF;
    ELSIF p_status IS NULL THEN
      SELECT u.id INTO v_anchor FROM users u WHERE u.workspace_id = p_workspace_id AND u.id < v_high ORDER BY u.id DESC OFFSET v_count - 1 - v_pos LIMIT 1;
    ELSE
      SELECT u.id INTO v_anchor FROM users u WHERE u.workspace_id = p_workspace_id AND u.status = p_status AND u.id < v_high ORDER BY u.id DESC OFFSET v_count - 1 - v_pos LIMIT 1;
    END IF;
    IF v_anchor IS NULL THEN
      -- The counts and the rows disagree (they cannot: both change in one statement).
      v_take := 0;
    END IF;
    v_low := v_anchor;
    v_high := v_anchor + 1;
    v_rank := 0;
  END IF;
  IF v_take = 0 THEN
    RETURN QUERY SELECT v_total, NULL::int8;
  ELSIF v_forward AND p_status IS NULL THEN
    RETURN QUERY SELECT v_total, u.id FROM users u
      WHERE u.workspace_id = p_workspace_id AND u.id >= v_low ORDER BY u.id LIMIT v_take OFFSET v_rank;
  ELSIF v_forward THEN
    RETURN QUERY SELECT v_total, u.id FROM users u
      WHERE u.workspace_id = p_workspace_id AND u.status = p_status AND u.id >= v_low ORDER BY u.id LIMIT v_take OFFSET v_rank;
  ELSIF p_status IS NULL THEN
    RETURN QUERY SELECT v_total, u.id FROM users u
      WHERE u.workspace_id = p_workspace_id AND u.id < v_high ORDER BY u.id DESC LIMIT v_take OFFSET v_rank;
  ELSE
    RETURN QUERY SELECT v_total, u.id FROM users u
      WHERE u.workspace_id = p_workspace_id AND u.status = p_status AND u.id < v_high ORDER BY u.id DESC LIMIT v_take OFFSET v_rank;
  END IF;
END
$$;
