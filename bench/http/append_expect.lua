-- wrk: appends with expect_seq. Each wrk thread tracks the sheet's next seq as its
-- connections learn it (201 -> next_seq, 409 -> next_seq of the error) and sends it.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local path = "/v1/sheets/" .. os.getenv("SHEET") .. "/entries"
local next_seq = 1
acked = 0
conflicts = 0
function request()
  return wrk.format(nil, path, nil,
    '{"type":"SetCell","body":{"ref":"B2","value":42},"expect_seq":' .. next_seq .. '}')
end
function response(status, headers, body)
  local n = tonumber(string.match(body, '"next_seq":(%d+)'))
  if n and n > next_seq then next_seq = n end
end
