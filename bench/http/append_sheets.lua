-- wrk script: one SetCell append per request, round-robin over the sheets named by env
-- SHEETS (comma-separated ids), each connection starting at a different sheet.
local sheets = {}
for id in string.gmatch(os.getenv("SHEETS"), "[^,]+") do sheets[#sheets + 1] = id end
local next_sheet = 0
local body = '{"type":"SetCell","body":{"ref":"B2","value":42}}'
local headers = {["Content-Type"] = "application/json"}
function setup(thread)
  thread:set("first", math.random(#sheets))
end
function init()
  next_sheet = (first or 1) - 1
end
function request()
  next_sheet = next_sheet % #sheets + 1
  return wrk.format("POST", "/v1/sheets/" .. sheets[next_sheet] .. "/entries", headers, body)
end
