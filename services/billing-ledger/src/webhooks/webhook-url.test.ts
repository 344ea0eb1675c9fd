import { checkWebhookUrl } from "./webhook-url";

const production = { httpsOnly: true, allowPrivate: false };
const development = { httpsOnly: false, allowPrivate: false };

test("production takes https only; elsewhere http too", async () => {
  await expect(checkWebhookUrl("http://93.184.216.34/hook", production)).rejects.toMatchObject({ code: "invalid_webhook_url" });
  await expect(checkWebhookUrl("https://93.184.216.34/hook", production)).resolves.toBeInstanceOf(URL);
  await expect(checkWebhookUrl("http://93.184.216.34/hook", development)).resolves.toBeInstanceOf(URL);
});

test("private addresses pass only with WEBHOOK_ALLOW_PRIVATE_ADDRESSES", async () => {
  await expect(checkWebhookUrl("http://192.168.0.10/hook", development)).rejects.toMatchObject({ code: "webhook_address_not_allowed" });
  await expect(checkWebhookUrl("http://192.168.0.10/hook", { ...development, allowPrivate: true })).resolves.toBeInstanceOf(URL);
});

test("credentials, fragments, other schemes and overlong URLs are refused", async () => {
  for (const url of ["https://a:b@93.184.216.34/", "https://93.184.216.34/#x", "file:///etc/passwd", `https://93.184.216.34/${"a".repeat(2048)}`]) {
    await expect(checkWebhookUrl(url, development)).rejects.toMatchObject({ code: "invalid_webhook_url" });
  }
});

test("another scheme is told what is accepted: http too, outside production", async () => {
  await expect(checkWebhookUrl("ftp://93.184.216.34/hook", development)).rejects.toThrow("scheme ftp is not allowed: use https or http");
  await expect(checkWebhookUrl("ftp://93.184.216.34/hook", { ...development, httpsOnly: true })).rejects.toThrow("scheme ftp is not allowed: use https");
});
