<?php
/**
 * Autoloader in the place Composer's vendor/autoload.php would be (PSR-4: Word_Stats\ => src/).
 * Hand-written for this example so that the plugin, like many real ones, cannot load without vendor/.
 *
 * @package Word_Stats
 */

spl_autoload_register(
	function ( $class_name ) {
		$prefix = 'Word_Stats\\';
		if ( 0 !== strpos( $class_name, $prefix ) ) {
			return;
		}
		$file = dirname( __DIR__ ) . '/src/' . str_replace( '\\', '/', substr( $class_name, strlen( $prefix ) ) ) . '.php';
		if ( is_file( $file ) ) {
			require $file;
		}
	}
);
