-- wrk script for scripts/soak.sh: a crawler-like mix. Most requests revalidate (If-None-Match
-- with the current ETag → 304), some fetch a page in full (a cold render when the cache is off),
-- some fetch the index or robots.txt. Counts statuses across threads.
local threads = {}
local paths = { "/sitemap-1.xml.gz", "/sitemap-2.xml.gz", "/sitemap-3.xml.gz", "/sitemap-1.xml", "/sitemap_index.xml", "/robots.txt" }

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  statuses = {}
  etags = {}
  for i = 1, #args do
    local path, tag = args[i]:match("^(.-)=(.*)$")
    if path then etags[path] = tag end
  end
  math.randomseed(os.time() + math.floor(os.clock() * 1000000))
end

function request()
  local path = paths[math.random(#paths)]
  local headers = {}
  if math.random() < 0.9 and etags[path] then
    headers["If-None-Match"] = etags[path]
  end
  return wrk.format("GET", path, headers)
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
