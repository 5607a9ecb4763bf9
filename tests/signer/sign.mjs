// Signs requests as a Web Bot Auth agent does, with Cloudflare's `web-bot-auth` package: an
// implementation independent of sitemapd's, for tests/api/signatures.rs. Installed by
// scripts/test.sh (`npm ci --prefix tests/signer`).
//
//   node sign.mjs keygen
//       prints {"private": <Ed25519 JWK with d>, "public": <the JWK without d>, "keyid": <RFC 7638 thumbprint>}
//   node sign.mjs sign '{"jwk": <private JWK>, "url": "http://host:port/path",
//                        "agent": "<Signature-Agent value>", "created": <unix s>, "expires": <unix s>}'
//       prints {"Signature": "...", "Signature-Input": "..."} for a GET of url carrying that
//       Signature-Agent (covered components: @authority and signature-agent, tag web-bot-auth)
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
  });
}

const [command, json] = process.argv.slice(2);
const out = command === "keygen" ? await keygen() : await sign(JSON.parse(json));
process.stdout.write(JSON.stringify(out) + "\n");
