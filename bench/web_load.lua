-- wrk script for bench/web_load.sh: POSTs the JSON body in the file $GPUPLAN_WEB_BODY to the URL's path.
local f = assert(io.open(os.getenv("GPUPLAN_WEB_BODY"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
