-- wrk script: one SetCell append per request on the sheet named by env SHEET.
wrk.method = "POST"
wrk.path = "/v1/sheets/" .. os.getenv("SHEET") .. "/entries"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"type":"SetCell","body":{"ref":"B2","value":42}}'
