<?xml version="1.0" encoding="UTF-8"?>
<!--
  sitemapd: shows sitemaps and sitemap indexes to people as tables. Search engines ignore it.
  XSLT 1.0, the version browsers implement. Served at /sitemap.xsl; sitemaps point to it with
  <?xml-stylesheet?> when SITEMAP_STYLESHEET=true.
-->
<xsl:stylesheet version="1.0"
    xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
    xmlns:s="http://www.sitemaps.org/schemas/sitemap/0.9"
    xmlns:xhtml="http://www.w3.org/1999/xhtml"
    xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"
    exclude-result-prefixes="s xhtml image">

  <xsl:output method="html" encoding="UTF-8" indent="yes" doctype-system="about:legacy-compat"/>

  <xsl:template match="/">
    <html lang="en">
      <head>
        <meta charset="utf-8"/>
        <meta name="viewport" content="width=device-width, initial-scale=1"/>
        <meta name="robots" content="noindex"/>
        <title>
          <xsl:choose>
            <xsl:when test="s:sitemapindex">Sitemap index</xsl:when>
            <xsl:otherwise>Sitemap</xsl:otherwise>
          </xsl:choose>
        </title>
        <style>
          :root { color-scheme: light; --ink: #1f2933; --muted: #616e7c; --line: #e4e7eb;
                  --accent: #0b6bcb; --head: #f5f7fa; --stripe: #fafbfc; }
          * { box-sizing: border-box; }
          body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
                 color: var(--ink); background: #fff; }
          header { padding: 28px 32px 18px; border-bottom: 1px solid var(--line); }
          h1 { margin: 0 0 4px; font-size: 22px; font-weight: 600; }
          header p { margin: 0; color: var(--muted); }
          .count { font-weight: 600; color: var(--ink); }
          main { padding: 8px 32px 40px; }
          table { width: 100%; border-collapse: collapse; margin-top: 12px; }
          th, td { padding: 7px 10px; border-bottom: 1px solid var(--line); text-align: left;
                   vertical-align: top; }
          th { position: sticky; top: 0; background: var(--head); font-size: 13px; font-weight: 600;
               color: var(--muted); text-transform: uppercase; letter-spacing: .03em;
               cursor: pointer; user-select: none; white-space: nowrap; }
          th:hover { color: var(--ink); }
          th::after { content: "\2195"; margin-left: 6px; opacity: .35; }
          th[aria-sort="ascending"]::after { content: "\2191"; opacity: 1; }
          th[aria-sort="descending"]::after { content: "\2193"; opacity: 1; }
          tbody tr:nth-child(even) { background: var(--stripe); }
          tbody tr:hover { background: #eef5fc; }
          td.url { word-break: break-all; width: 100%; }
          td.num, th.num { text-align: right; }
          td.when, td.num, td.freq { white-space: nowrap; font-variant-numeric: tabular-nums; }
          a { color: var(--accent); text-decoration: none; }
          a:hover { text-decoration: underline; }
          footer { padding: 0 32px 32px; color: var(--muted); font-size: 13px; }
        </style>
      </head>
      <body>
        <xsl:apply-templates select="s:urlset | s:sitemapindex"/>
        <footer>
          This file is written for search engines
          (<a href="https://www.sitemaps.org/protocol.html">sitemaps.org protocol</a>);
          browsers show it as a table. Click a column heading to sort.
        </footer>
        <script>
          <![CDATA[
          // Sorts a table by the column whose heading is clicked (or Enter); again reverses.
          // The order is kept in the address (#sort=priority, #sort=-lastmod), so a sorted
          // view can be shared. Cells may carry data-sort; empty cells go last either way.
          (function () {
            var table = document.querySelector("table.sortable");
            if (!table) return;
            var headings = Array.prototype.slice.call(table.tHead.rows[0].cells);
            function key(cell) {
              var value = cell.getAttribute("data-sort");
              return value === null ? cell.textContent.trim() : value;
            }
            function compare(a, b, numeric) {
              if (numeric) return parseFloat(a) - parseFloat(b);
              return a < b ? -1 : a > b ? 1 : 0;
            }
            function sort(th, ascending) {
              var column = headings.indexOf(th);
              var numeric = th.classList.contains("num");
              var body = table.tBodies[0];
              var rows = Array.prototype.slice.call(body.rows);
              rows.sort(function (r1, r2) {
                var a = key(r1.cells[column]), b = key(r2.cells[column]);
                if (a === "" || b === "") return (a === "") - (b === "");
                return ascending ? compare(a, b, numeric) : -compare(a, b, numeric);
              });
              headings.forEach(function (h) { h.removeAttribute("aria-sort"); });
              th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
              rows.forEach(function (row) { body.appendChild(row); });
            }
            headings.forEach(function (th) {
              th.setAttribute("tabindex", "0");
              function toggle() {
                var ascending = th.getAttribute("aria-sort") !== "ascending";
                sort(th, ascending);
                var hash = "#sort=" + (ascending ? "" : "-") + th.getAttribute("data-key");
                history.replaceState(null, "", hash);
              }
              th.addEventListener("click", toggle);
              th.addEventListener("keydown", function (e) {
                if (e.key === "Enter" || e.key === " ") { e.preventDefault(); toggle(); }
              });
            });
            var asked = /^#sort=(-?)([a-z]+)$/.exec(location.hash);
            var th = asked && table.tHead.querySelector('th[data-key="' + asked[2] + '"]');
            if (th) sort(th, asked[1] !== "-");
            // Addresses as people read them: percent-encoded UTF-8 decoded; links keep the
            // exact URL.
            document.querySelectorAll("a.loc").forEach(function (link) {
              try { link.textContent = decodeURI(link.textContent); } catch (e) { /* as is */ }
            });
          })();
          ]]>
        </script>
      </body>
    </html>
  </xsl:template>

  <xsl:template match="s:urlset">
    <xsl:variable name="alternates" select="count(s:url/xhtml:link[@rel = 'alternate']) &gt; 0"/>
    <xsl:variable name="images" select="count(s:url/image:image) &gt; 0"/>
    <header>
      <h1>Sitemap</h1>
      <p><span class="count" id="url-count"><xsl:value-of select="count(s:url)"/></span>
        <xsl:choose>
          <xsl:when test="count(s:url) = 1"> URL</xsl:when>
          <xsl:otherwise> URLs</xsl:otherwise>
        </xsl:choose>
      </p>
    </header>
    <main>
      <table class="sortable" id="urls">
        <thead>
          <tr>
            <th data-key="url">URL</th>
            <th data-key="lastmod">Last modified</th>
            <th data-key="changefreq">Change frequency</th>
            <th data-key="priority" class="num">Priority</th>
            <xsl:if test="$images"><th data-key="images" class="num">Images</th></xsl:if>
            <xsl:if test="$alternates"><th data-key="alternates" class="num">Alternates</th></xsl:if>
          </tr>
        </thead>
        <tbody>
          <xsl:for-each select="s:url">
            <tr>
              <td class="url"><a class="loc" href="{s:loc}"><xsl:value-of select="s:loc"/></a></td>
              <xsl:call-template name="lastmod"/>
              <td class="freq"><xsl:value-of select="s:changefreq"/></td>
              <td class="num"><xsl:value-of select="s:priority"/></td>
              <xsl:if test="$images">
                <td class="num"><xsl:value-of select="count(image:image)"/></td>
              </xsl:if>
              <xsl:if test="$alternates">
                <td class="num"><xsl:value-of select="count(xhtml:link[@rel = 'alternate'])"/></td>
              </xsl:if>
            </tr>
          </xsl:for-each>
        </tbody>
      </table>
    </main>
  </xsl:template>

  <xsl:template match="s:sitemapindex">
    <header>
      <h1>Sitemap index</h1>
      <p><span class="count" id="sitemap-count"><xsl:value-of select="count(s:sitemap)"/></span>
        <xsl:choose>
          <xsl:when test="count(s:sitemap) = 1"> sitemap</xsl:when>
          <xsl:otherwise> sitemaps</xsl:otherwise>
        </xsl:choose>
      </p>
    </header>
    <main>
      <table class="sortable" id="sitemaps">
        <thead>
          <tr>
            <th data-key="sitemap">Sitemap</th>
            <th data-key="lastmod">Last modified</th>
          </tr>
        </thead>
        <tbody>
          <xsl:for-each select="s:sitemap">
            <xsl:variable name="loc" select="normalize-space(s:loc)"/>
            <xsl:variable name="cut" select="string-length($loc) - string-length('.gz')"/>
            <tr>
              <td class="url">
                <!-- Link the XML form of a .xml.gz file: a browser shows it, the gzip it saves. -->
                <xsl:choose>
                  <xsl:when test="substring($loc, $cut - 3) = '.xml.gz'">
                    <a class="loc" href="{substring($loc, 1, $cut)}"><xsl:value-of select="$loc"/></a>
                  </xsl:when>
                  <xsl:otherwise>
                    <a class="loc" href="{$loc}"><xsl:value-of select="$loc"/></a>
                  </xsl:otherwise>
                </xsl:choose>
              </td>
              <xsl:call-template name="lastmod"/>
            </tr>
          </xsl:for-each>
        </tbody>
      </table>
    </main>
  </xsl:template>

  <!-- 2024-05-01T12:00:00+00:00 shown as 2024-05-01 12:00 (UTC), sorted by the full value. -->
  <xsl:template name="lastmod">
    <xsl:variable name="value" select="normalize-space(s:lastmod)"/>
    <td class="when" data-sort="{$value}" title="{$value}">
      <xsl:choose>
        <xsl:when test="string-length($value) &gt;= 16 and substring($value, 11, 1) = 'T'">
          <xsl:value-of select="concat(substring($value, 1, 10), ' ', substring($value, 12, 5))"/>
          <xsl:if test="substring($value, 20) = '+00:00' or substring($value, 20) = 'Z'"> UTC</xsl:if>
        </xsl:when>
        <xsl:otherwise><xsl:value-of select="$value"/></xsl:otherwise>
      </xsl:choose>
    </td>
  </xsl:template>
</xsl:stylesheet>
