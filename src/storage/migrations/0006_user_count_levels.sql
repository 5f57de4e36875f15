-- user_counts holds only derived data: empty it, key it by level as well, and count the users
-- again at every level (block = id >> bits of the level, USER_COUNT_LEVEL_BITS in schema.ts:
-- 512 ids, 32 of those, 32 of those, 32 of those, then the whole workspace; slot = id % 4 as
-- the service spreads them), in key order.
DELETE FROM "user_counts";--> statement-breakpoint
ALTER TABLE "user_counts" ADD COLUMN "level" smallint NOT NULL;--> statement-breakpoint
ALTER TABLE "user_counts" DROP CONSTRAINT "user_counts__pk";
--> statement-breakpoint
ALTER TABLE "user_counts" ADD CONSTRAINT "user_counts__pk" PRIMARY KEY("workspace_id","status","level","block","slot");--> statement-breakpoint
INSERT INTO "user_counts" ("workspace_id", "status", "level", "block", "slot", "user_count")
SELECT u."workspace_id", u."status", l."level", u."id" >> l."bits", (u."id" % 4)::smallint, count(*)
FROM "users" u CROSS JOIN (VALUES (0::smallint, 9), (1::smallint, 14), (2::smallint, 19), (3::smallint, 24), (4::smallint, 63)) AS l("level", "bits")
GROUP BY 1, 2, 3, 4, 5
ORDER BY 1, 2, 3, 4, 5;
--> statement-breakpoint
-- The ids of one page of a workspace's users with status `p_status` (all users when null), by
-- id, each with the exact total (one row with a null id when the page is empty), from the
-- levels of user_counts (storage/users.queries.ts, findPage). The page is read from the nearer
-- end of the listing. A page starting fewer than `p_direct_rows` rows from that end is walked
-- to from it, as OFFSET would; a deeper one goes down the levels (a running sum over at most
-- 32 blocks of each, stopping at the block holding its first row) and walks at most 511 index
-- entries of its 512-id block. A function so that PostgreSQL plans these short statements once
-- per session instead of planning one long statement on every call.
CREATE FUNCTION "user_page_ids"(p_workspace_id bigint, p_status text, p_offset bigint, p_page_size bigint, p_direct_rows bigint)
RETURNS TABLE ("total" bigint, "id" bigint) LANGUAGE plpgsql STABLE ROWS 100
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  v_total bigint;
  v_forward boolean;
  v_rank bigint;
  v_take bigint;
  v_block bigint;
  v_low bigint := 0;
  v_high bigint := 9223372036854775807;
  v_rest bigint;
  v_statuses text[] := CASE WHEN p_status IS NULL THEN ARRAY['active', 'deactivated'] ELSE ARRAY[p_status] END;
BEGIN
  SELECT coalesce(sum(c.user_count), 0)::int8 INTO v_total FROM user_counts c
  WHERE c.workspace_id = p_workspace_id AND c.status = ANY (v_statuses) AND c.level = 4;
  v_forward := 2 * p_offset + p_page_size <= v_total;
  v_rank := CASE WHEN v_forward THEN p_offset ELSE greatest(v_total - p_offset - p_page_size, 0) END;
  v_take := greatest(least(p_page_size, v_total - p_offset), 0);
  IF v_take > 0 AND v_rank >= p_direct_rows THEN
    -- Down the levels in one statement: at each, the block holding the row `rank` rows from
    -- the end read from (among the 32 blocks of its parent; all blocks of level 3), and the
    -- rows of that block before it.
    WITH RECURSIVE down ("level", block, rank) AS (
      SELECT 4, 0::int8, v_rank
      UNION ALL
      SELECT d."level" - 1, s.block, s.rest FROM down d CROSS JOIN LATERAL (
        SELECT b.block, d.rank - b.before AS rest FROM (
          SELECT g.block, g.n, (sum(g.n) OVER (ORDER BY CASE WHEN v_forward THEN g.block ELSE -g.block END))::int8 - g.n AS before
          FROM (
            SELECT c.block, sum(c.user_count)::int8 AS n FROM user_counts c
            WHERE c.workspace_id = p_workspace_id AND c.status = ANY (v_statuses) AND c."level" = d."level" - 1
              AND c.block BETWEEN d.block << (CASE WHEN d."level" = 4 THEN 39 ELSE 5 END)
                AND ((d.block + 1) << (CASE WHEN d."level" = 4 THEN 39 ELSE 5 END)) - 1
            GROUP BY c.block
          ) g
        ) b
        WHERE b.before <= d.rank AND d.rank < b.before + b.n
        LIMIT 1
      ) s
      WHERE d."level" > 0
    )
    SELECT d.block, d.rank INTO v_block, v_rest FROM down d WHERE d."level" = 0;
    IF v_block IS NULL THEN
      -- The counts and the rows disagree (they cannot: both change in one statement).
      v_take := 0;
    END IF;
    v_rank := v_rest;
    v_low := v_block << 9;
    v_high := (v_block + 1) << 9;
  END IF;
  IF v_take = 0 THEN
    -- No row: the total alone.
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
