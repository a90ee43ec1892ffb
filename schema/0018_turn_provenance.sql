-- Role-faithful provenance of recall hits (issue #18 item 3; projections/vectors.py). Who produced a turn's text:
-- user, assistant, system, or a tool (a turn of role tool, or one carrying tool_result blocks, as a user message
-- does in Anthropic's format) and which tool, found through the tool_use id among the thread's earlier turns.
-- Rows folded before this migration keep NULL until `memengine rebuild` re-folds memory_vectors (version 2).
ALTER TABLE memory_vectors ADD COLUMN IF NOT EXISTS role TEXT;        -- user | assistant | system | tool
ALTER TABLE memory_vectors ADD COLUMN IF NOT EXISTS tool TEXT;        -- the tool's name when role = tool and known
ALTER TABLE memory_vectors ADD COLUMN IF NOT EXISTS tool_calls JSONB; -- {tool_use id: tool name} of this turn's calls
