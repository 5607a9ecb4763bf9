-- wrk script: counts response statuses over all threads and prints "status CODE COUNT" lines,
-- so run.sh can check that the revalidation load really got 304s (wrk itself does not
-- count 3xx as errors, so a server answering 200 would otherwise go unnoticed).
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  statuses = {}
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
  local total = {}
  for _, t in ipairs(threads) do
    for code, n in pairs(t:get("statuses")) do
      total[code] = (total[code] or 0) + n
    end
  end
  for code, n in pairs(total) do
    io.write(string.format("status %d %d\n", code, n))
  end
end
