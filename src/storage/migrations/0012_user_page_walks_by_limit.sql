-- user_page_ids (migration 0007) again, with every walk of the users written so that its
-- plan does not hang on statistics (docs/performance.md, "Fast on data as it arrives"). Its
-- statements are planned once per session, generic; on tables nothing analyzed yet the planner
-- estimates a couple of users per workspace. `ORDER BY id LIMIT n OFFSET k` then looked no
-- cheaper as a walk of users__pk in order (the offset is costed as half the rows) than as
-- reading every user of the workspace from the bitmap of an index and sorting them: the
-- status-less page 5 of 100 read the 2,000 users of its workspace. Now each walk is a
-- subquery that reads `rank + take` ids in index order (a LIMIT the generic plan cannot
-- evaluate, which the planner takes for a tenth of the rows: an ordered index range, stopping
-- early, is then the cheapest plan at any estimate), and the offset is applied to its output;
-- the anchor inside a 128-id block is looked for between both ends of that block, so that no
-- plan of it reads more than the block. Same signature, same results.
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
        SELECT w.id INTO v_anchor FROM (
          SELECT u.id FROM users u WHERE u.workspace_id = p_workspace_id AND u.id >= v_low AND u.id < v_high ORDER BY u.id LIMIT v_pos + 1
        ) w ORDER BY w.id OFFSET v_pos LIMIT 1;
      ELSE
        SELECT w.id INTO v_anchor FROM (
          SELECT u.id FROM users u WHERE u.workspace_id = p_workspace_id AND u.status = p_status AND u.id >= v_low AND u.id < v_high
          ORDER BY u.id LIMIT v_pos + 1
        ) w ORDER BY w.id OFFSET v_pos LIMIT 1;
      END IF;
    ELSIF p_status IS NULL THEN
      SELECT w.id INTO v_anchor FROM (
        SELECT u.id FROM users u WHERE u.workspace_id = p_workspace_id AND u.id >= v_low AND u.id < v_high ORDER BY u.id DESC LIMIT v_count - v_pos
      ) w ORDER BY w.id DESC OFFSET v_count - 1 - v_pos LIMIT 1;
    ELSE
      SELECT w.id INTO v_anchor FROM (
        SELECT u.id FROM users u WHERE u.workspace_id = p_workspace_id AND u.status = p_status AND u.id >= v_low AND u.id < v_high
        ORDER BY u.id DESC LIMIT v_count - v_pos
      ) w ORDER BY w.id DESC OFFSET v_count - 1 - v_pos LIMIT 1;
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
    RETURN QUERY SELECT v_total, w.id FROM (
      SELECT u.id FROM users u WHERE u.workspace_id = p_workspace_id AND u.id >= v_low ORDER BY u.id LIMIT v_rank + v_take
    ) w ORDER BY w.id OFFSET v_rank;
  ELSIF v_forward THEN
    RETURN QUERY SELECT v_total, w.id FROM (
      SELECT u.id FROM users u WHERE u.workspace_id = p_workspace_id AND u.status = p_status AND u.id >= v_low ORDER BY u.id LIMIT v_rank + v_take
    ) w ORDER BY w.id OFFSET v_rank;
  ELSIF p_status IS NULL THEN
    RETURN QUERY SELECT v_total, w.id FROM (
      SELECT u.id FROM users u WHERE u.workspace_id = p_workspace_id AND u.id < v_high ORDER BY u.id DESC LIMIT v_rank + v_take
    ) w ORDER BY w.id DESC OFFSET v_rank;
  ELSE
    RETURN QUERY SELECT v_total, w.id FROM (
      SELECT u.id FROM users u WHERE u.workspace_id = p_workspace_id AND u.status = p_status AND u.id < v_high ORDER BY u.id DESC LIMIT v_rank + v_take
    ) w ORDER BY w.id DESC OFFSET v_rank;
  END IF;
END
$$;
