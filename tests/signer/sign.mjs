// Signs requests as a Web Bot Auth agent does, with Cloudflare's `web-bot-auth` package: an
// implementation independent of sitemapd's, for tests/api/signatures.rs. Installed by
// scripts/test.sh (`npm ci --prefix tests/signer`).
//
//   node sign.mjs keygen
//       prints {"private": <Ed25519 JWK with d>, "public": <the JWK without d>, "keyid": <RFC 7638 thumbprint>}
//   node sign.mjs sign '{"jwk": <private JWK>, "url": "http://host:port/path",
//                        "agent": "<Signature-Agent value>", "created": <unix s>, "expires": <unix s>,
//                        "label": "sig1", "components": ["@authority", "signature-agent"]}'
//       prints {"Signature": "...", "Signature-Input": "..."} for a GET of url carrying that
//       Signature-Agent (tag web-bot-auth; label and components optional, the package's defaults
//       being sig1 and @authority with signature-agent; "@target-uri" is the url as given)
import { generateKeyPairSync } from "node:crypto";
import { signatureHeaders, jwkToKeyID, helpers } from "web-bot-auth";
import { Ed25519Signer } from "web-bot-auth/crypto";

async function keygen() {
  const { privateKey } = generateKeyPairSync("ed25519");
  const jwk = privateKey.export({ format: "jwk" });
  const { d, ...pub } = jwk;
  const keyid = await jwkToKeyID(pub, helpers.WEBCRYPTO_SHA256, helpers.BASE64URL_DECODE);
  return { private: jwk, public: pub, keyid };
}

async function sign(args) {
  const signer = await Ed25519Signer.fromJWK(args.jwk);
  const request = new Request(args.url, { headers: { "Signature-Agent": args.agent } });
  return signatureHeaders(request, signer, {
    created: new Date(args.created * 1000),
    expires: new Date(args.expires * 1000),
    ...(args.label ? { key: args.label } : {}),
    ...(args.components ? { components: args.components } : {}),
  });
}

const [command, json] = process.argv.slice(2);
const out = command === "keygen" ? await keygen() : await sign(JSON.parse(json));
process.stdout.write(JSON.stringify(out) + "\n");
