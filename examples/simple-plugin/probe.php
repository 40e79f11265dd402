<?php
// A contributor's probe: activate the plugin and report what it does, as JSON.
require_once ABSPATH . 'wp-admin/includes/plugin.php';
$activated = activate_plugin( 'simple-plugin/simple-plugin.php' );
echo wp_json_encode(
	array(
		'wordpress' => get_bloginfo( 'version' ),
		'php'       => PHP_VERSION,
		'active'    => is_plugin_active( 'simple-plugin/simple-plugin.php' ),
		'activationError' => is_wp_error( $activated ) ? $activated->get_error_message() : null,
		'greeting'  => function_exists( 'simple_plugin_greeting' ) ? simple_plugin_greeting( 'Codebox' ) : null,
		'shortcode' => do_shortcode( '[simple_greeting name="reviewer"]' ),
	),
	JSON_PRETTY_PRINT
) . "\n";
