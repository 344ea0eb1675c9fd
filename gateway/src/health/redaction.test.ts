import { describeFailure, redactCredentials, withoutCredentials } from "./redaction";

describe("what the health report says of an address or an error", () => {
  it("shows a URL without its user, password or query", () => {
    expect(withoutCredentials("amqp://meter-gateway:s3cret@broker:5672/meter?heartbeat=5")).toBe("amqp://broker:5672/meter");
    expect(withoutCredentials("http://10.0.0.7:8081/")).toBe("http://10.0.0.7:8081");
    expect(withoutCredentials("not a url")).toBe("(not a URL)");
  });

  it("masks credentials a driver quoted in its error", () => {
    expect(redactCredentials("cannot reach amqp://meter-gateway:s3cret@broker:5672/meter, giving up")).toBe(
      "cannot reach amqp://***@broker:5672/meter, giving up",
    );
    expect(redactCredentials("connect ECONNREFUSED 127.0.0.1:5672")).toBe("connect ECONNREFUSED 127.0.0.1:5672");
  });

  it("names a timeout by its limit and a refused connection by its cause", () => {
    expect(describeFailure(Object.assign(new Error("aborted"), { name: "TimeoutError" }), 1500)).toBe("no answer within 1500 ms");
    const refused = new TypeError("fetch failed", { cause: new Error("connect ECONNREFUSED 127.0.0.1:1") });
    expect(describeFailure(refused, 1500)).toBe("connect ECONNREFUSED 127.0.0.1:1");
    expect(describeFailure(new Error("Handshake to amqp://u:p@h/ refused"), 1500)).toBe("Handshake to amqp://***@h/ refused");
  });
});
