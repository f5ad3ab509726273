import java.io.IOException;
import java.lang.reflect.Field;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import software.amazon.dynamodb.services.local.main.ServerRunner;
import software.amazon.dynamodb.services.local.server.DynamoDBProxyServer;

/**
 * Starts AWS's DynamoDB Local bound to one address (127.0.0.1 unless the system property
 * {@code dynamodb.local.host} says otherwise), for {@code local/dynamoDbLocal.ts}.
 *
 * <p>DynamoDB Local's own entry point ({@code ServerRunner.main}) listens on every interface and
 * has no option to choose one; it also sets up telemetry to AWS unless told not to. This launcher
 * builds the server from the same command-line arguments, sets the host on its Jetty connector
 * before starting it, and never configures telemetry.
 *
 * <p>It also exits when its standard input reaches end-of-file, i.e. when the Node.js process
 * that spawned it has gone, so a crashed test run cannot leave DynamoDB Local running.
 */
public final class DynamoDbLocalLoopback {
  private DynamoDbLocalLoopback() {}

  public static void main(String[] args) throws Exception {
    String host = System.getProperty("dynamodb.local.host", "127.0.0.1");
    DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
    if (proxy == null) {
      System.err.println("DynamoDB Local did not accept the arguments");
      System.exit(2);
    }
    Field field = DynamoDBProxyServer.class.getDeclaredField("server");
    field.setAccessible(true);
    Server server = (Server) field.get(proxy);
    for (Connector connector : server.getConnectors()) {
      ((ServerConnector) connector).setHost(host);
    }

    Thread parentWatch = new Thread(() -> {
      try {
        while (System.in.read() != -1) {
          // discard: only end-of-file matters
        }
      } catch (IOException ignored) {
        // the pipe is gone: same as end-of-file
      }
      System.exit(0);
    }, "parent-watch");
    parentWatch.setDaemon(true);
    parentWatch.start();

    proxy.start();
    System.out.println("DynamoDB Local listening on " + host);
  }
}
